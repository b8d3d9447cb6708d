"""The evaluation app's models, one module per noun: endpoints, runs (with results and the response cache),
the judge's configurations and runs."""
from evaluation.models.endpoints import (  # noqa: F401
    MAX_CONCURRENCY,
    TABLE9_EXTRA,
    TABLE9_PRESET,
    EndpointKind,
    ModelEndpoint,
)
from evaluation.models.judge import (  # noqa: F401
    BeliefSource,
    JudgeConfig,
    JudgeProbeLabel,
    JudgeRun,
    ProbeKind,
    run_status_choices,
)
from evaluation.models.runs import (  # noqa: F401
    CachedResponse,
    OptionOrder,
    Result,
    Run,
    RunStatus,
    SupersededResult,
)
