"""The opening book: its file format and reader (:mod:`.store`), the choice of a book move (:mod:`.probe`) and
the builder that grows a book by drop-out expansion with the engine's own search (:mod:`.build`)."""
