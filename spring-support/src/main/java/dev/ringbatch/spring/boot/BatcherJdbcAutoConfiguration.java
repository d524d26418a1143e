package dev.ringbatch.spring.boot;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.support.SQLExceptionSubclassTranslator;
import org.springframework.jdbc.support.SQLExceptionTranslator;

/**
 * Translates the {@code SQLException}s of the factory's batchers' sinks into Spring's
 * {@code DataAccessException}s (see {@link SqlExceptionTranslatingSinkDecorator}) when Spring JDBC is on the
 * class path. The translator is the application's: an {@link SQLExceptionTranslator} bean, else the one of its
 * single {@link JdbcTemplate}, else an {@link SQLExceptionSubclassTranslator} (what a {@code JdbcTemplate} uses
 * without an {@code sql-error-codes.xml}). Off with {@code ringbatch.jdbc.exception-translation.enabled=false}.
 */
@AutoConfiguration(before = BatcherAutoConfiguration.class,
    afterName = { // Boot 4's, then Boot 3's
        "org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration",
        "org.springframework.boot.autoconfigure.jdbc.JdbcTemplateAutoConfiguration"})
@ConditionalOnClass(SQLExceptionTranslator.class)
@ConditionalOnProperty(prefix = "ringbatch.jdbc.exception-translation", name = "enabled", havingValue = "true",
    matchIfMissing = true)
public class BatcherJdbcAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  public SqlExceptionTranslatingSinkDecorator ringbatchSqlExceptionTranslation(
      ObjectProvider<SQLExceptionTranslator> translators, ObjectProvider<JdbcTemplate> templates) {
    SQLExceptionTranslator translator = translators.getIfUnique();
    if (translator == null) {
      JdbcTemplate template = templates.getIfUnique();
      translator = template != null ? template.getExceptionTranslator() : new SQLExceptionSubclassTranslator();
    }
    return new SqlExceptionTranslatingSinkDecorator(translator);
  }
}
