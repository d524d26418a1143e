package dev.ringbatch.micrometer;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jspecify.annotations.Nullable;

/** Records what it is told, on whichever thread tells it. */
class RecordingObservationHandler implements ObservationHandler<Observation.Context> {
  final List<Observation.Context> started = new CopyOnWriteArrayList<>();
  final List<Observation.Context> stopped = new CopyOnWriteArrayList<>();
  final List<Observation.Context> opened = new CopyOnWriteArrayList<>();
  final List<Observation.Context> closed = new CopyOnWriteArrayList<>();

  @Override
  public void onStart(Observation.Context context) {
    started.add(context);
  }

  @Override
  public void onStop(Observation.Context context) {
    stopped.add(context);
  }

  @Override
  public void onScopeOpened(Observation.Context context) {
    opened.add(context);
  }

  @Override
  public void onScopeClosed(Observation.Context context) {
    closed.add(context);
  }

  @Override
  public boolean supportsContext(Observation.@Nullable Context context) {
    return true;
  }
}
