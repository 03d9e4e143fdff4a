"""Input and output: the JSON-LD export and import (:mod:`.jsonld`), what may be stored
(:mod:`.checks`), importers of other memories' dumps (:mod:`.importers`), copying a store
(:mod:`.transfer`) and reading one without opening it (:mod:`.inspect`).
"""
