package dev.ringbatch.postgresql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

/** COPY's text format as the sink writes it, the line the server blames, and the builder's checks. */
class CopyTextTest {
  private static String encode(Object value) {
    CopyText text = new CopyText();
    text.value("c", value instanceof String s ? s : PgValues.text("c", value));
    return new String(text.bytes(), 0, text.length(), StandardCharsets.UTF_8);
  }

  @Test
  void values_areWrittenAsPostgresReadsThem() {
    assertThat(encode(null)).isEqualTo("\\N");
    assertThat(encode("a\\b\tc\nd\re")).isEqualTo("a\\\\b\\tc\\nd\\re");
    assertThat(encode("\\N")).isEqualTo("\\\\N"); // the text "\N", not NULL
    assertThat(encode("\\.")).isEqualTo("\\\\."); // not the end-of-data marker
    assertThat(encode("héllo €𝄞")).isEqualTo("héllo €𝄞");
    assertThat(encode(true)).isEqualTo("true");
    assertThat(encode(false)).isEqualTo("false");
    assertThat(encode(42L)).isEqualTo("42");
    assertThat(encode(new BigDecimal("1E+3"))).isEqualTo("1000");
    assertThat(encode(Double.NaN)).isEqualTo("NaN");
    assertThat(encode(Double.NEGATIVE_INFINITY)).isEqualTo("-Infinity");
    assertThat(encode(new byte[] {0, 10, (byte) 0xff})).isEqualTo("\\\\x000aff");
    UUID uuid = UUID.randomUUID();
    assertThat(encode(uuid)).isEqualTo(uuid.toString());
    assertThat(encode(Instant.parse("2026-11-25T10:15:30Z"))).isEqualTo("2026-11-25 10:15:30+00:00");
    assertThat(encode(LocalDate.of(2026, 11, 25))).isEqualTo("2026-11-25");
    assertThat(encode(ZonedDateTime.of(2026, 11, 25, 10, 0, 0, 0, ZoneId.of("Europe/Paris"))))
        .isEqualTo("2026-11-25 10:00:00+01:00");
    assertThat(encode(Thread.State.NEW)).isEqualTo("NEW");
    assertThat(encode(new StringBuilder("x\ty"))).isEqualTo("x\\ty");
  }

  @Test
  void textPostgresCannotStore_isRefusedNamingTheColumn() {
    assertThatThrownBy(() -> encode("a\u0000b")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("column 'c'").hasMessageContaining("NUL").hasMessageContaining("index 1");
    assertThatThrownBy(() -> encode("a\ud800b")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("column 'c'").hasMessageContaining("surrogate U+D800");
    assertThatThrownBy(() -> encode("a\udc00")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> encode("a\ud800")).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aLargeBatch_growsTheBuffer_andKeepsEveryByte() {
    CopyText text = new CopyText();
    String value = "x".repeat(1000);
    for (int i = 0; i < 1000; i++) {
      text.value("c", value);
      text.newline();
    }
    assertThat(text.length()).isEqualTo(1001 * 1000);
    assertThat(text.bytes()[text.length() - 1]).isEqualTo((byte) '\n');
  }

  @Test
  void bufferGrownForAPeak_isGivenBack_onceABatchUsesUnderAQuarterOfIt() {
    CopyText text = new CopyText();
    text.value("c", "x".repeat(8 << 20));
    int peak = text.bytes().length;
    text.reset(); // the next batch starts after the 8 MB one: still needed, kept
    assertThat(text.bytes().length).isEqualTo(peak);
    text.value("c", "small");
    text.reset(); // after a batch of 5 bytes
    assertThat(text.bytes().length).isEqualTo(1 << 16);
  }

  private static PSQLException error(String where) {
    return new PSQLException(new ServerErrorMessage("SERROR\0C23514\0Mnew row violates check constraint\0W" + where
        + "\0"));
  }

  private static int refusedLine(String table, Throwable e) {
    return new CopyStatements<String>(table, java.util.List.of(new CopyColumn<>("payload", p -> p)),
        java.util.List.of()).refusedLine(e);
  }

  @Test
  void refusedLine_isTheCopysLine_notAFunctionsLine() {
    assertThat(refusedLine("events", error("COPY events, line 5, column payload: \"bad\""))).isEqualTo(5);
    assertThat(refusedLine("events", error("COPY events, line 12"))).isEqualTo(12);
    assertThat(refusedLine("events", error("PL/pgSQL function check_row() line 3 at RAISE\nCOPY events,"
        + " line 7"))).isEqualTo(7);
    assertThat(refusedLine("events", error("COPY events, line 9, column payload: \"x, line 2\""))).isEqualTo(9);
    assertThat(refusedLine("events", error("SQL statement \"INSERT INTO x\""))).isEqualTo(-1);
    assertThat(refusedLine("events", new java.sql.SQLException("no server message"))).isEqualTo(-1);
    assertThat(refusedLine("t", new RuntimeException(error("COPY t, line 3")))).isEqualTo(3);
  }

  @Test
  void refusedLine_ofATableNamedLikeALine_isTheLineAfterTheName() {
    assertThat(refusedLine("\"ev, line 1\"", error("COPY ev, line 1, line 4, column payload: null input")))
        .isEqualTo(4);
    assertThat(refusedLine("audit.\"Ev\"\"s\"", error("COPY Ev\"s, line 2"))).isEqualTo(2);
    assertThat(refusedLine("Audit.Events", error("COPY events, line 6: \"x\""))).isEqualTo(6);
    assertThat(refusedLine("events", error("COPY events2, line 6"))).isEqualTo(-1);
  }

  @Test
  void buildOverlapping_withAHugeConnectionCount_isRefusedNamingConnections_beforeAllocating() {
    PgCopySink.Builder<String> builder = PgCopySink.<String>into(new PGSimpleDataSource(), "t").column("a", s -> s);
    assertThatThrownBy(() -> builder.buildOverlapping(Integer.MAX_VALUE))
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessage("connections must be between 1 and 256 but was 2147483647");
    assertThatThrownBy(() -> builder.buildOverlapping(0)).isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessage("connections must be between 1 and 256 but was 0");
  }

  @Test
  void builder_refusesBadInput_namingTheFieldAndValue() {
    DataSource ds = new PGSimpleDataSource();
    assertThatThrownBy(() -> PgCopySink.into(ds, " ")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("table").hasMessageContaining("' '");
    assertThatThrownBy(() -> PgCopySink.<String>into(ds, "t").column("", s -> s))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("column name");
    assertThatThrownBy(() -> PgCopySink.<String>into(ds, "t").column("a", s -> s).column("a", s -> s))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'a'");
    assertThatThrownBy(() -> PgCopySink.<String>into(ds, "t").column("a", s -> s).idempotentOn("id"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("key column 'id'");
    assertThatThrownBy(() -> PgCopySink.<String>into(ds, "t").build()).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("at least one column");
    assertThatThrownBy(() -> PgCopySink.<String>into(ds, "t").column("a", s -> s).buildOverlapping(0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("connections").hasMessageContaining("0");
    assertThat(PgCopySink.<String>into(ds, "t").column("id", s -> s).idempotentOn("id").build())
        .hasToString("PgCopySink{table=t, columns=[id], idempotentOn=[id]}");
  }
}
