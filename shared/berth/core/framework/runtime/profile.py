"""A profile: its plugins made against one ClusterState, sorted by extension point."""

from __future__ import annotations

from dataclasses import dataclass

from berth.core.cache.extension import StateExtension
from berth.core.cache.state import ClusterState
from berth.core.framework.events import Action, ClusterEvent, HintFactory
from berth.core.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    KeepsState,
    NormalizeScorePlugin,
    Plugin,
    PostFilterPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)

# percentageOfNodesToScore: kube's default is 0 (adaptive); berth scores every feasible node
BERTH_DEFAULT_PERCENTAGE = 100


@dataclass(frozen=True)
class Interest:
    """A plugin's interest in a cluster event, with its queueing hint."""

    plugin: str
    event: ClusterEvent
    hint: HintFactory | None


@dataclass(frozen=True)
class Profile:
    """A profile's plugins, made against one ClusterState, sorted by extension point."""

    state: ClusterState
    pre_filters: tuple[PreFilterPlugin, ...]  # of the plugins enabled as filters, in filter order
    filters: tuple[FilterPlugin, ...]
    post_filters: tuple[PostFilterPlugin, ...]
    pre_scores: tuple[PreScorePlugin, ...]
    scorers: tuple[tuple[ScorePlugin, int], ...]
    normalizers: dict[str, NormalizeScorePlugin]
    reservers: tuple[ReservePlugin, ...]
    interests: tuple[Interest, ...]  # of the plugins enabled as prefilters or filters: only they reject pods
    extensions: tuple[StateExtension, ...]
    percentage_of_nodes_to_score: int = BERTH_DEFAULT_PERCENTAGE  # 0: kube's adaptive rule
    pre_enqueues: tuple[PreEnqueuePlugin, ...] = ()

    @classmethod
    def of(
        cls,
        state: ClusterState,
        filters: list[Plugin],
        scorers: list[tuple[Plugin, int]],
        *,
        pre_enqueues: list[Plugin] | None = None,
        pre_filters: list[Plugin] | None = None,
        pre_scores: list[Plugin] | None = None,
        post_filters: list[Plugin] | None = None,
        reservers: list[Plugin] | None = None,
        percentage_of_nodes_to_score: int = BERTH_DEFAULT_PERCENTAGE,
    ) -> Profile:
        """Sort plugins by the Protocols they implement (checked once, here) and attach the state they
        keep. A point not given is derived: PreFilter and PreScore from the filters and scorers that
        implement them, PreEnqueue, PostFilter and Reserve from every plugin that does (a config gives each)."""
        every = list(dict.fromkeys([*filters, *(p for p, _ in scorers), *(pre_filters or ()), *(reservers or ())]))
        every = list(dict.fromkeys([*every, *(pre_scores or ()), *(post_filters or ()), *(pre_enqueues or ())]))
        score_plugins = [(p, w) for p, w in scorers if isinstance(p, ScorePlugin)]
        pre = filters if pre_filters is None else pre_filters
        rejecting = list(dict.fromkeys([*pre, *filters]))
        interests = tuple(
            Interest(p.name, e.event, e.hint)
            for p in rejecting
            if isinstance(p, EnqueueExtensions)
            for e in p.events_to_register()
        )
        extensions: tuple[StateExtension, ...] = ()
        for p in every:  # plugins may share one (InterPodAffinity's and PodTopologySpread's PodIndex): once each
            ext = p.extension() if isinstance(p, KeepsState) else None
            if ext is not None and not any(e is ext for e in extensions):
                extensions = (*extensions, ext)
        for ext in extensions:
            state.attach(ext)
        return cls(
            state=state,
            pre_filters=tuple(p for p in pre if isinstance(p, PreFilterPlugin)),
            filters=tuple(p for p in filters if isinstance(p, FilterPlugin)),
            post_filters=tuple(
                p for p in (every if post_filters is None else post_filters) if isinstance(p, PostFilterPlugin)
            ),
            pre_scores=tuple(
                p
                for p in ([p for p, _ in score_plugins] if pre_scores is None else pre_scores)
                if isinstance(p, PreScorePlugin)
            ),
            scorers=tuple(score_plugins),
            normalizers={p.name: p for p, _ in score_plugins if isinstance(p, NormalizeScorePlugin)},
            reservers=tuple(p for p in (every if reservers is None else reservers) if isinstance(p, ReservePlugin)),
            interests=interests,
            extensions=extensions,
            percentage_of_nodes_to_score=percentage_of_nodes_to_score,
            pre_enqueues=tuple(
                p for p in (every if pre_enqueues is None else pre_enqueues) if isinstance(p, PreEnqueuePlugin)
            ),
        )

    def interested(self, resource: str, action: Action) -> tuple[Interest, ...]:
        """The filter plugins a change of this resource can make accept a pod they rejected."""
        return tuple(i for i in self.interests if i.event.matches(resource, action))
