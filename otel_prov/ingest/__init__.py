"""From spans to the store: one pipeline (:mod:`.pipeline`: map, submit, wait, rescue) on one writer
(:mod:`.writer`: appending to the on-disk store's log, or a writer thread for the others), shared by
the SDK exporter (:mod:`.exporter`) and the OTLP receiver (:mod:`otel_prov.serve.receiver`); problems
are counted and logged once per kind (:mod:`.problems`)."""
