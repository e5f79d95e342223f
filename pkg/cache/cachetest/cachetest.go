// Package cachetest builds a filled cache.Cache for the tests and benchmarks
// of packages other than pkg/cache, without a cluster and without an API
// server.
//
// It is test-only: import it from _test.go files, never from production code.
// It lives outside pkg/cache because Go test helpers cannot cross packages,
// and it reaches the cache only through its public API: the cache as
// cache.Provider hands it to plugin factories, fed through its typed entry
// points (cache.ApplyPod, ApplyFinishedPod, the dialect.Sink's SetGroup, ...)
// exactly as pkg/feed's informers would deliver the same objects. It imports
// nothing above pkg/cache: the cache, the scheduler-plugins dialect, the
// status package, and upstream's framework runtime and client-go fakes.
package cachetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/dialect/schedplugins"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/podslim"
	"github.com/caldera-sched/caldera/pkg/status"
)

// Profile names the profile of the handle the cache is built with.
const Profile = "cachetest"

// NewForTest returns a cache that has been fed pgs and pods, its gang
// members listed.
//
// Every pod must carry the PodGroup label, be pending and unbound, and every
// PodGroup's minMember must equal its number of pods, so that every group is
// enqueueable. The cache lives until the test ends.
func NewForTest(tb testing.TB, pgs []*v1alpha1.PodGroup, pods []*v1.Pod) *cache.Cache {
	tb.Helper()
	if err := validate(pgs, pods); err != nil {
		tb.Fatalf("cachetest.NewForTest: %v", err)
	}
	c, _ := New(tb, pgs, pods)
	return c
}

// New returns a cache that has been fed pgs and pods, in any state (bound,
// finished, without a group), its gang members listed, and the Feeder that
// fed it, so that a test can feed it more (Feeder.Relist).
func New(tb testing.TB, pgs []*v1alpha1.PodGroup, pods []*v1.Pod) (*cache.Cache, *Feeder) {
	tb.Helper()
	c, f := NewUnstarted(tb)
	f.Start(pgs, pods)
	return c, f
}

// NewUnstarted returns the cache as plugin factories get it from
// cache.Provider.Get, before anything was fed to it, and the Feeder whose
// Start does what the command and the scheduler then do.
//
// The cache's handle is upstream's framework (no plugins, profile Profile)
// over a fake clientset (Feeder.Requests) and an informer factory nothing
// starts; its Event recorder drops Events, and it activates nothing (no
// scheduling queue runs).
func NewUnstarted(tb testing.TB) (*cache.Cache, *Feeder) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	cs := fake.NewSimpleClientset() // NewClientset builds a field manager: 200 ms on the first call, for nothing here
	h, err := frameworkruntime.NewFramework(ctx, nil, &config.KubeSchedulerProfile{SchedulerName: Profile},
		frameworkruntime.WithClientSet(cs),
		frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(cs, 0)),
		frameworkruntime.WithEventRecorder(&events.FakeRecorder{}),
		frameworkruntime.WithWaitingPods(frameworkruntime.NewWaitingPodsMap()),
		frameworkruntime.WithPodActivator(noQueue{}),
	)
	if err != nil {
		tb.Fatalf("cachetest: %v", err)
	}
	p := cache.NewProvider(status.AlwaysLeading())
	c, err := p.Get(ctx, h)
	if err != nil {
		tb.Fatalf("cachetest: %v", err)
	}
	return c, &Feeder{tb: tb, c: c, p: p, cs: cs, logger: klog.Background()}
}

// noQueue is the pod activator of a handle with no scheduling queue.
type noQueue struct{}

func (noQueue) Activate(klog.Logger, map[string]*v1.Pod) {}

var _ fwk.PodActivator = noQueue{}

// Feeder feeds a cache as pkg/feed's informers would, without an API
// server: each informer is a store of what it last delivered (by
// namespace and name), and objects reach the cache as that informer
// selects, transforms and delivers them. The PodGroups arrive as the
// scheduler-plugins dialect reads them; unfinished pods as the scheduler's
// pod informer delivers them; finished ones (Succeeded, Failed) as the
// feed's finished-member informers do: the labelled ones, and the Job pods
// without the label, slimmed as there. Each delivered object is a copy, as
// an informer's decoded object is. Queues, namespaces and nodes are the
// caller's to apply (cache.ApplyQueue, ApplyNamespace, ApplyNode), and it
// runs no admission loop: call Cache.AdmissionPass. A Feeder is used from
// one goroutine; the cache's entry points may be called from any.
type Feeder struct {
	tb      testing.TB
	c       *cache.Cache
	p       *cache.Provider
	cs      *fake.Clientset
	logger  klog.Logger
	started bool

	groups     map[string]*v1alpha1.PodGroup
	unfinished map[string]*v1.Pod
	// finished holds the finished members by informer: labelled, Jobs'.
	finished [2]map[string]*v1.Pod
}

// Start does, once, what the command and then the scheduler do: it seals
// the cache (Provider.Seal: the settings handed to Provider are applied,
// and no plugin factory may set anything up afterwards), delivers
// the initial lists in the order the real start does (PodGroups and
// finished members first, then the scheduler's pods), and says the gang
// members are listed (cache.MembersListed, as feed.WaitForMembers does).
func (f *Feeder) Start(pgs []*v1alpha1.PodGroup, pods []*v1.Pod) {
	f.tb.Helper()
	if f.started {
		f.tb.Fatalf("cachetest: Feeder.Start called twice")
	}
	f.started = true
	if _, err := f.p.Seal(); err != nil {
		f.tb.Fatalf("cachetest: %v", err)
	}
	f.groups = map[string]*v1alpha1.PodGroup{}
	f.unfinished = map[string]*v1.Pod{}
	f.finished = [2]map[string]*v1.Pod{{}, {}}
	f.RelistGroups(pgs)
	f.relistFinished(pods)
	f.relistUnfinished(pods)
	f.c.MembersListed(f.logger)
}

// Relist delivers what the PodGroup informer, then the pod informers,
// deliver when they relist pgs and pods after a watch gap (a lost
// connection, a compacted resource version): RelistGroups, then
// RelistPods.
func (f *Feeder) Relist(pgs []*v1alpha1.PodGroup, pods []*v1.Pod) {
	f.RelistGroups(pgs)
	f.RelistPods(pods)
}

// RelistGroups delivers a relist of the PodGroup informer: the deletion of
// every PodGroup it holds that pgs lacks (its last state, as a tombstone
// carries it), then an update of each held one (whether it changed or not,
// a new uid included) and an addition of each new one, as client-go's
// informer delivers a replaced list.
func (f *Feeder) RelistGroups(pgs []*v1alpha1.PodGroup) {
	f.mustStart()
	relist(f.groups, pgs, func(pg *v1alpha1.PodGroup) (*v1alpha1.PodGroup, bool) { return pg.DeepCopy(), true },
		func(old, pg *v1alpha1.PodGroup) {
			switch {
			case pg == nil:
				f.c.DeleteGroup(f.logger, schedplugins.Spec(old))
			case old == nil:
				f.c.SetGroup(f.logger, schedplugins.Spec(pg))
			default:
				f.c.UpdateGroup(f.logger, schedplugins.Spec(old), schedplugins.Spec(pg))
			}
		})
}

// RelistPods delivers a relist of the pod informers, each of the pods it
// selects, as RelistGroups does: a pod that finished in the gap leaves the
// scheduler's informer (deleted) and joins a finished one.
func (f *Feeder) RelistPods(pods []*v1.Pod) {
	f.mustStart()
	f.relistFinished(pods)
	f.relistUnfinished(pods)
}

// Provider returns the Provider that built the cache, as plugin factories
// get it: a test hands it the settings a plugin's factory would (queue
// admission, reservations, plain profiles) before Start applies them.
func (f *Feeder) Provider() *cache.Provider { return f.p }

// Requests returns how many requests the cache's handle's clientset has
// received: the cache is fed without the API, so any is the cache's own.
func (f *Feeder) Requests() int { return len(f.cs.Actions()) }

func (f *Feeder) mustStart() {
	if !f.started {
		f.tb.Fatalf("cachetest: the Feeder relists before Start")
	}
}

// relistUnfinished is the scheduler's pod informer (field selector
// status.phase!=Succeeded,status.phase!=Failed; managed fields trimmed).
func (f *Feeder) relistUnfinished(pods []*v1.Pod) {
	relist(f.unfinished, pods, func(p *v1.Pod) (*v1.Pod, bool) {
		if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			return nil, false
		}
		p = p.DeepCopy()
		p.ManagedFields = nil
		return p, true
	}, func(old, p *v1.Pod) {
		if p == nil {
			f.c.DeletePod(f.logger, old)
			return
		}
		f.c.ApplyPod(f.logger, old, p)
	})
}

// relistFinished is the feed's finished-member informers (wireFinished):
// labelled pods, and Job pods without the label, in a phase
// cache.FinishedSelector selects, slimmed by their transforms.
func (f *Feeder) relistFinished(pods []*v1.Pod) {
	for i, transform := range []func(any) (any, error){podslim.Pod, podslim.JobPod} {
		relist(f.finished[i], pods, func(p *v1.Pod) (*v1.Pod, bool) {
			_, labelled := p.Labels[gangbook.PodGroupLabel]
			_, job := p.Labels[batchv1.JobNameLabel]
			switch p.Status.Phase {
			case v1.PodPending, v1.PodRunning, v1.PodUnknown:
				return nil, false
			}
			if (i == 0) != labelled || (i == 1 && !job) {
				return nil, false
			}
			out, err := transform(p.DeepCopy())
			if err != nil {
				f.tb.Fatalf("cachetest: slimming pod %s/%s: %v", p.Namespace, p.Name, err)
			}
			return out.(*v1.Pod), true
		}, func(old, p *v1.Pod) {
			if p == nil {
				f.c.DeleteFinishedPod(f.logger, old)
				return
			}
			f.c.ApplyFinishedPod(f.logger, old, p)
		})
	}
}

// relist makes store hold what list selects (selected returns the object
// the informer would hold, or false when it selects none), delivering the
// difference as client-go's informers deliver a replaced list: deletions
// first (deliver(last state, nil)), in key order; then, in list order, an
// update of each held object (deliver(held, new)) and an addition of each
// other (deliver(nil, new)).
func relist[T metav1.Object](store map[string]T, list []T, selected func(T) (T, bool), deliver func(old, obj T)) {
	var zero T
	next := make(map[string]T, len(list))
	var order []string
	for _, obj := range list {
		out, ok := selected(obj)
		if !ok {
			continue
		}
		k := obj.GetNamespace() + "/" + obj.GetName()
		if _, dup := next[k]; !dup {
			order = append(order, k)
		}
		next[k] = out
	}
	var gone []string
	for k := range store {
		if _, ok := next[k]; !ok {
			gone = append(gone, k)
		}
	}
	sort.Strings(gone)
	for _, k := range gone {
		old := store[k]
		delete(store, k)
		deliver(old, zero)
	}
	for _, k := range order {
		old := store[k]
		store[k] = next[k]
		deliver(old, next[k])
	}
}

// Dumped returns c's dump (Cache.Dump), decoded, its groups sorted by key:
// what a test outside pkg/cache can see of the cache's aggregates.
func Dumped(tb testing.TB, c *cache.Cache) *cache.CacheDump {
	tb.Helper()
	data, err := c.Dump()
	if err != nil {
		tb.Fatal(err)
	}
	var d cache.CacheDump
	if err := json.Unmarshal(data, &d); err != nil {
		tb.Fatal(err)
	}
	sort.Slice(d.Groups, func(i, j int) bool { return d.Groups[i].Key < d.Groups[j].Key })
	return &d
}

// DumpedGroups returns the groups of c's dump, sorted by key.
func DumpedGroups(tb testing.TB, c *cache.Cache) []cache.GroupDump {
	tb.Helper()
	return Dumped(tb, c).Groups
}

// Gangs returns groups PodGroups of size members each in namespace ns, named
// g0, g1, …, with their pods named <group>-p0, <group>-p1, …, each requesting
// 100m cpu: input that NewForTest accepts.
func Gangs(ns string, groups, size int) ([]*v1alpha1.PodGroup, []*v1.Pod) {
	created := metav1.NewTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	pgs := make([]*v1alpha1.PodGroup, 0, groups)
	pods := make([]*v1.Pod, 0, groups*size)
	for g := range groups {
		name := fmt.Sprint("g", g)
		pgs = append(pgs, &v1alpha1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-pg-" + name), CreationTimestamp: created},
			Spec:       v1alpha1.PodGroupSpec{MinMember: int32(size)},
		})
		for i := range size {
			pname := fmt.Sprintf("%s-p%d", name, i)
			pods = append(pods, &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: ns, Name: pname, UID: types.UID(ns + "-" + pname), CreationTimestamp: created,
					Labels: map[string]string{gangbook.PodGroupLabel: name},
				},
				Spec: v1.PodSpec{Containers: []v1.Container{{
					Name:      "c",
					Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}},
				}}},
				Status: v1.PodStatus{Phase: v1.PodPending},
			})
		}
	}
	return pgs, pods
}

func validate(pgs []*v1alpha1.PodGroup, pods []*v1.Pod) error {
	size := map[gangbook.GroupKey]int32{}
	for _, p := range pods {
		k, ok := gangbook.GroupKeyOf(p)
		if !ok {
			return fmt.Errorf("pod %s/%s has no %s label", p.Namespace, p.Name, gangbook.PodGroupLabel)
		}
		if p.Spec.NodeName != "" || (p.Status.Phase != "" && p.Status.Phase != v1.PodPending) {
			return fmt.Errorf("pod %s/%s is not pending and unbound", p.Namespace, p.Name)
		}
		size[k]++
	}
	for _, pg := range pgs {
		k := gangbook.GroupKey{Namespace: pg.Namespace, Name: pg.Name}
		if pg.Spec.MinMember != size[k] {
			return fmt.Errorf("PodGroup %s: minMember %d, but %d pods", k, pg.Spec.MinMember, size[k])
		}
		delete(size, k)
	}
	for k := range size {
		return fmt.Errorf("pods of group %s have no PodGroup", k)
	}
	return nil
}
