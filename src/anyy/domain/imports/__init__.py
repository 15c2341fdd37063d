"""Reading other agents' sessions into anyy trees (SPEC I1-I3): one pure parser per format, over the
lines of a file, into an :class:`~anyy.domain.imports.model.ImportedSession`; and the plan that matches
it against what an earlier import already wrote (:mod:`anyy.domain.imports.matching`)."""
