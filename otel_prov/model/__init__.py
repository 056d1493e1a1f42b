"""The explainability model as data: vocabulary, IRIs, RDF terms and quads.  Pure: no I/O, no state.

- :mod:`.vocab`: the namespaces (closed), the graph name, the prefixes, every term as N-Triples text;
- :mod:`.iris`: every IRI pattern of the model, built and parsed back in one place;
- :mod:`.terms`: IRIs and literals as N-Triples text, escaped;
- :mod:`.quads`: a quad, N-Quads text, and an ``rdflib.Dataset`` made from it;
- :mod:`.profiles`: the two profiles, ``seed`` and ``strict``.
"""
