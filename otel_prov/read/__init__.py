"""The read side: sessions and traces read back from a store as plain data.

- :mod:`.model`: the data (``SessionRow``, ``Trace``, ``TraceStep``, ``SelectedEdge``);
- :mod:`.reader`: :class:`~.reader.TraceReader`, SPARQL through a store's read protocol, never a
  backend's own API;
- :mod:`.build`: a trace from its triples (pure);
- :mod:`.graph`: a trace's provenance graph as data, for pictures (pure);
- :mod:`.datasets`: the graph as an ``rdflib.Dataset`` (``load_dataset``, ``spans_to_dataset``).
"""
