package reclaim

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	policy "github.com/caldera-sched/caldera/pkg/reclaim"
	"github.com/caldera-sched/caldera/pkg/status"
)

// abandon forgets the victims of pod's plan when the Evaluator did not
// carry it out.
func (pl *Reclaim) abandon(pod *v1.Pod, p *plan) {
	uids := make([]types.UID, len(p.victims))
	for i, v := range p.victims {
		uids[i] = v.UID
	}
	pl.evictions.Abandon(pod.UID, uids)
}

// evicted records the outcome of one eviction for preemptor: metrics and
// the Events that name the preemptor's queue, on the victim and on its
// PodGroup.
func (pl *Reclaim) evicted(ctx context.Context, preemptor types.UID, victim *v1.Pod, err error) {
	e, src, ok := pl.evictions.Finish(preemptor, victim, err)
	if !ok || err != nil {
		return
	}
	evictions.WithLabelValues(e.Mode.String(), e.VictimQueue).Inc()
	reason, msg := ReasonPreempted, fmt.Sprintf("Preempted by %s, a higher-priority group of queue %q", e.PreemptorName, e.Queue)
	if e.Mode == policy.Reclaim {
		reason = ReasonReclaimed
		msg = fmt.Sprintf("Reclaimed for %s of queue %q: queue %q holds more than its deserved share", e.PreemptorName, e.Queue, e.VictimQueue)
	}
	rec := pl.handle.EventRecorder().WithLogger(klog.FromContext(ctx))
	rec.Eventf(victim, nil, v1.EventTypeWarning, reason, "Evicting", "%s", msg)
	if src != nil {
		rec.Eventf(status.GroupRef(*src), nil, v1.EventTypeWarning, reason, "Evicting", "%s/%s: %s", victim.Namespace, victim.Name, msg)
	}
}
