"""The named projectors, in the order they are run."""

from projections.activity import ActivityProjector
from projections.base import Projector
from projections.code import CodeProjector
from projections.deep_recall import DeepRecallProjector
from projections.edges import EdgesProjector
from projections.entities import EntitiesProjector
from projections.hits import HitsProjector
from projections.keyword import KeywordProjector
from projections.knowledge import KnowledgeProjector
from projections.memories import MemoriesProjector
from projections.privacy import PrivacyProjector
from projections.section_vectors import SectionVectorsProjector
from projections.sessions import SessionsProjector
from projections.transcript_vectors import TranscriptVectorsProjector
from projections.transcripts import TranscriptsProjector
from projections.vectors import VectorsProjector

PROJECTORS: dict[str, Projector] = {p.name: p for p in (MemoriesProjector(), KeywordProjector(), VectorsProjector(),
                                                        ActivityProjector(), EdgesProjector(), EntitiesProjector(),
                                                        PrivacyProjector())}

PROJECTORS[KnowledgeProjector.name] = KnowledgeProjector()  # the knowledge library (projections/knowledge.py)
PROJECTORS[CodeProjector.name] = CodeProjector()  # code intelligence (projections/code.py)
PROJECTORS[SectionVectorsProjector.name] = SectionVectorsProjector()  # lazy section vectors (hit-log)
PROJECTORS[SessionsProjector.name] = SessionsProjector()  # session messages (projections/sessions.py)
PROJECTORS[DeepRecallProjector.name] = DeepRecallProjector()  # deep recall's store and blind spots
PROJECTORS[TranscriptsProjector.name] = TranscriptsProjector()  # transcripts (projections/transcripts.py)
PROJECTORS[TranscriptVectorsProjector.name] = TranscriptVectorsProjector()  # lazy chunk vectors (hit-log)
PROJECTORS[HitsProjector.name] = HitsProjector()  # the hit-log's results for analysts (analytics.hits)


def get_projector(name: str) -> Projector:
    try:
        return PROJECTORS[name]
    except KeyError:
        raise KeyError(f"unknown projection {name!r}; known: {', '.join(PROJECTORS)}") from None
