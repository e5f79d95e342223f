// Package reclaim is the CalderaReclaim plugin: Volcano's reclaim (across
// queues) and preempt (within a queue) actions as a kube-scheduler PostFilter
// that replaces DefaultPreemption. Victims are chosen by pkg/reclaim from the
// scheduler's snapshot and Caldera's queue accounting; the upstream
// preemption Evaluator and Executor re-check the scheduler's filters on the
// chosen node, consult extenders, nominate the node and evict (DisruptionTarget
// condition, asynchronous when SchedulerAsyncPreemption is on).
package reclaim

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/groupspec"
	"github.com/caldera-sched/caldera/pkg/plugins/args"
	policy "github.com/caldera-sched/caldera/pkg/reclaim"
)

// Name is the plugin's name in KubeSchedulerConfiguration.
const Name = "CalderaReclaim"

// Event reasons on victim pods and their PodGroups.
const (
	ReasonReclaimed = "Reclaimed"
	ReasonPreempted = "Preempted"
)

// Reclaim implements PostFilter (and PreEnqueue, to hold a preemptor while
// its asynchronous evictions run).
type Reclaim struct {
	handle    fwk.Handle
	cache     accounting
	evictions evictionBook
	opts      policy.Options
	fts       feature.Features
	executor  *preemption.Executor
	evaluator *preemption.Evaluator

	mu sync.Mutex
	// plans holds the decision for a preemptor while the Evaluator runs it.
	// The evictions in flight are in the cache, shared by every profile.
	plans map[types.UID]*plan
}

// accounting is what the plugin reads from the shared cache
// (*cache.Cache): the queue accounting a decision needs. The plugin's
// tests give it a fake.
type accounting interface {
	// ReclaimInput is the decision's input for preemptor over running,
	// or why it may not preempt.
	ReclaimInput(preemptor *v1.Pod, running []*v1.Pod, leaving func(*v1.Pod) bool) (policy.Input, bool, string)
}

// evictionBook is what the plugin reads from and tells the evictions in
// flight, shared by every profile (cache.Evictions). The plugin's tests
// give it a fake.
type evictionBook interface {
	InFlight(pods []*v1.Pod) map[types.UID]bool
	GangPlan(pod *v1.Pod) (node string, inFlight bool)
	Start(evs []admission.Eviction, now time.Time) bool
	Abandon(preemptor types.UID, victims []types.UID)
	// Finish also names the victim's PodGroup, nil for none.
	Finish(preemptor types.UID, victim *v1.Pod, err error) (e admission.Eviction, victimGroup *groupspec.Source, ok bool)
	// HoldForGang also returns the members of pod's gang among nodes'
	// keys, as the cache last saw them.
	HoldForGang(pod *v1.Pod, group string, nodes map[types.UID]string) map[types.UID]*v1.Pod
}

var (
	_ accounting   = (*cache.Cache)(nil)
	_ evictionBook = cache.Evictions{}
)

// plan is a decision being carried out for one preemptor.
type plan struct {
	node    string
	victims []*v1.Pod
	mode    policy.Mode
	// leaving are the pods on the planned node already on their way out
	// (terminating, or evicted for an earlier plan): the plan counted their
	// room as becoming free, so the filters are re-run without them too.
	leaving map[types.UID]bool
	// group is the preemptor's gang ("" for a singleton) and members the
	// node the plan freed for each of its members that holds none.
	group   string
	members map[types.UID]string
	// at is node's index among the potential nodes (those that failed
	// the filters as Unschedulable), of which there were potential: where
	// the Evaluator's dry run starts (GetOffsetAndNumCandidates).
	at, potential int32
}

var (
	_ fwk.PostFilterPlugin  = &Reclaim{}
	_ fwk.PreEnqueuePlugin  = &Reclaim{}
	_ fwk.EnqueueExtensions = &Reclaim{}
	_ preemption.Interface  = &Reclaim{}
)

// New builds the plugin for one profile; every profile shares the cache of p.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, p *cache.Provider) (fwk.Plugin, error) {
	var a Args
	if err := args.Load(Name, obj, &a); err != nil {
		return nil, err
	}
	c, err := p.Get(ctx, h)
	if err != nil {
		return nil, err
	}
	if err := p.EnableEvictions(h.ProfileName(), *a.EnableReclaim, *a.EnablePreemption); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	registerMetrics()
	pl := &Reclaim{
		handle:    h,
		cache:     c,
		evictions: c.Evictions(),
		opts:      policy.Options{Reclaim: *a.EnableReclaim, Preempt: *a.EnablePreemption, MinRuntime: a.minRuntime()},
		fts:       feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate),
		plans:     map[types.UID]*plan{},
	}
	pl.executor = preemption.NewExecutor(h, pl.fts)
	evict := pl.executor.PreemptPod
	pl.executor.PreemptPod = func(ctx context.Context, c preemption.Candidate, pre preemption.ExecutorPreemptor, victim *v1.Pod, plugin string) (bool, error) {
		inMemory, err := evict(ctx, c, pre, victim, plugin)
		pl.evicted(ctx, pre.UID(), victim, err)
		return inMemory, err
	}
	pl.evaluator = preemption.NewEvaluator(Name, h, pl, pl.executor)
	return pl, nil
}

// Name returns the plugin name.
func (pl *Reclaim) Name() string { return Name }
