package cache

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	vc "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vclisters "volcano.sh/apis/pkg/client/listers/scheduling/v1beta1"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/dialect/volcano"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// gangAPI is one gang API as the cache's tests drive it: how a PodGroup is
// delivered and how a pod joins it.
type gangAPI struct {
	name string
	// group delivers a PodGroup of ns/name with minMember min in queue q
	// (minResources cpu when cpuQ is not "").
	group func(c *Cache, ns, name string, min int32, q, cpuQ string)
	// member is a pod of ours that joins group.
	member func(ns, name, group string, opts ...podOpt) *v1.Pod
}

var dialects = []gangAPI{
	{
		name: "scheduler-plugins",
		group: func(c *Cache, ns, name string, min int32, q, cpuQ string) {
			opts := []pgOpt{pgQueue(q)}
			if cpuQ != "" {
				opts = append(opts, minResources(v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpuQ)}))
			}
			addPG(c, mkPG(ns, name, min, opts...))
		},
		member: memberOf,
	},
	{
		name: "volcano",
		group: func(c *Cache, ns, name string, min int32, q, cpuQ string) {
			c.SetGroup(logger, volcano.Spec(mkVolcanoPG(ns, name, min, q, cpuQ)))
		},
		member: volcanoMember,
	},
}

func mkVolcanoPG(ns, name string, min int32, q, cpuQ string) *vc.PodGroup {
	pg := &vc.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("vpg-" + ns + "-" + name), CreationTimestamp: metav1.NewTime(t0)},
		Spec:       vc.PodGroupSpec{MinMember: min, Queue: q},
	}
	if cpuQ != "" {
		pg.Spec.MinResources = &v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpuQ)}
	}
	return pg
}

// volcanoMember is a pod of ours as Volcano's job controller makes it: in
// its group by annotation, with no PodGroup label.
func volcanoMember(ns, name, group string, opts ...podOpt) *v1.Pod {
	p := mkPod(ns, name, "", append([]podOpt{ours}, opts...)...)
	p.Annotations = map[string]string{volcano.GroupNameAnnotation: group}
	return p
}

// The behaviours a gang has whatever API declared it.
func TestGangBehavesTheSameInEveryDialect(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name+"/waits for members", func(t *testing.T) {
			c, h := newTestCache(t)
			c.ApplyNode(logger, mkNode("n1", "16"))
			d.group(c, "ns", "g", 3, "", "")
			pods := []*v1.Pod{d.member("ns", "m0", "g"), d.member("ns", "m1", "g"), d.member("ns", "m2", "g")}
			addAll(c, pods[:2]...)
			if member, ok, _ := c.Enqueueable(pods[0]); !member || ok {
				t.Errorf("2 of 3 members: Enqueueable = %v, %v; want a member that waits", member, ok)
			}
			h.activations()
			add(c, pods[2])
			if _, ok, msg := c.Enqueueable(pods[0]); !ok {
				t.Errorf("3 of 3 members: not enqueueable: %s", msg)
			}
			if got, want := activatedPods(h), names(pods...); !slices.Equal(got, want) {
				t.Errorf("activated %v, want %v", got, want)
			}
		})
		t.Run(d.name+"/all or nothing", func(t *testing.T) {
			c, _ := newTestCache(t)
			c.ApplyNode(logger, mkNode("n1", "2"))
			d.group(c, "ns", "g", 3, "", "")
			pods := []*v1.Pod{d.member("ns", "m0", "g"), d.member("ns", "m1", "g"), d.member("ns", "m2", "g")}
			addAll(c, pods...)
			// 3 cpu on a 2-cpu cluster: refused before any member is placed.
			if member, code, msg := c.PreFilter(pods[0], t0); !member || code == admission.PreFilterOK {
				t.Errorf("PreFilter = %v, %v (%s); want the gang refused as too large", member, code, msg)
			}
		})
		t.Run(d.name+"/queue capability", func(t *testing.T) {
			c, _, _ := newAdmissionCache(t, singletons, mkQueue("q", capability("3")))
			c.ApplyNode(logger, mkNode("n1", "16"))
			d.group(c, "ns", "a", 2, "q", "")
			d.group(c, "ns", "b", 2, "q", "")
			a := []*v1.Pod{d.member("ns", "a0", "a"), d.member("ns", "a1", "a")}
			b := []*v1.Pod{d.member("ns", "b0", "b", createdAt(t0.Add(time.Second))), d.member("ns", "b1", "b", createdAt(t0.Add(time.Second)))}
			for _, p := range slices.Concat(a, b) {
				podEvent(c, p)
			}
			pass(c, t0)
			wantAdmitted(t, c, verdict{true, ""}, a...)
			wantAdmitted(t, c, verdict{false, "queue q: cpu request 2 exceeds remaining capability 1"}, b...)
		})
	}
}

// Volcano's job controller creates a job's pods only once its PodGroup is
// Inqueue: the gang is admitted from its PodGroup alone (minResources,
// minMember), charged to its queue, and its status says Inqueue; one
// beyond the queue's capability stays Pending with the verdict.
func TestVolcanoGangIsAdmittedBeforeItsPods(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q", capability("4")))
	c.ApplyNode(logger, mkNode("n1", "16"))
	c.ApplyNode(logger, mkNode("n2", "16"))
	first, second := mkVolcanoPG("ns", "first", 2, "q", "3"), mkVolcanoPG("ns", "second", 2, "q", "3")
	second.CreationTimestamp = metav1.NewTime(t0.Add(time.Second))
	vcc := withVolcano(t, c, first, second)
	c.SetGroup(logger, volcano.Spec(first))
	c.SetGroup(logger, volcano.Spec(second))

	pass(c, t0)
	if u := unitOf(c, queue.GroupUnit("ns", "first")); u == nil || !u.Admitted {
		t.Fatalf("first gang, no pods yet: unit %+v, want admitted", u)
	}
	if u := unitOf(c, queue.GroupUnit("ns", "second")); u == nil || u.Admitted {
		t.Fatalf("second gang beyond capability: unit %+v, want pending", u)
	}
	wantUsage(t, c, "q", 0, 3)
	// Its reservation holds in later passes, though no pod exists yet.
	pass(c, t0.Add(time.Second))
	if u := unitOf(c, queue.GroupUnit("ns", "second")); u == nil || u.Admitted {
		t.Fatalf("second gang, next pass: unit %+v, want pending", u)
	}

	syncVolcanoStatus(t, c, vcc)
	got := volcanoStatus(t, vcc, "first")
	if got.Phase != vc.PodGroupInqueue {
		t.Errorf("first: phase %q, want Inqueue", got.Phase)
	}
	got = volcanoStatus(t, vcc, "second")
	if got.Phase != vc.PodGroupPending {
		t.Errorf("second: phase %q, want Pending", got.Phase)
	}
	if !hasCondition(got, vc.PodGroupUnschedulableType, vc.NotEnoughResourcesReason, "capability") {
		t.Errorf("second: conditions %+v, want Unschedulable with the capability verdict", got.Conditions)
	}

	// The controller creates the pods; they bind, run, and succeed.
	pods := []*v1.Pod{volcanoMember("ns", "f0", "first", cpu("1500m")), volcanoMember("ns", "f1", "first", cpu("1500m"))}
	for _, p := range pods {
		podEvent(c, p)
	}
	wantAdmitted(t, c, verdict{true, ""}, pods...)
	for _, p := range pods {
		podEvent(c, next(p, boundTo("n1"), phase(v1.PodRunning)))
	}
	syncVolcanoStatus(t, c, vcc)
	if got := volcanoStatus(t, vcc, "first"); got.Phase != vc.PodGroupRunning || got.Running != 2 {
		t.Errorf("first, members running: %+v, want Running with 2 running", got)
	}
	for _, p := range pods {
		c.ApplyFinishedPod(logger, nil, next(p, boundTo("n1"), phase(v1.PodSucceeded)))
	}
	syncVolcanoStatus(t, c, vcc)
	if got := volcanoStatus(t, vcc, "first"); got.Phase != vc.PodGroupCompleted || got.Succeeded != 2 || got.Running != 0 {
		t.Errorf("first, members succeeded: %+v, want Completed with 2 succeeded", got)
	}
}

// A Volcano Queue is a Caldera queue: its capability limits admission; a
// Caldera Queue of the same name wins; fields Caldera does not honour get
// a Warning Event.
func TestVolcanoQueue(t *testing.T) {
	c, h, _ := newAdmissionCache(t, singletons)
	c.ApplyNode(logger, mkNode("n1", "16"))
	vq := &vc.Queue{ObjectMeta: metav1.ObjectMeta{Name: "vq", UID: "vq-uid"},
		Spec: vc.QueueSpec{Weight: 1, Capability: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")},
			Deserved: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}
	big := mkVolcanoPG("ns", "big", 3, "vq", "")
	vcc := withVolcano(t, c, vq, big)
	vcc.reader.OnQueue(vq, false)
	vcc.reader.OnQueue(vq, false) // a resync: no second warning

	d := dialects[1]
	vcc.reader.OnPodGroup(logger, nil, big, false) // the informer's event: read as a spec, counted in vq
	pods := []*v1.Pod{d.member("ns", "b0", "big"), d.member("ns", "b1", "big"), d.member("ns", "b2", "big")}
	for _, p := range pods {
		podEvent(c, p)
	}
	pass(c, t0)
	wantAdmitted(t, c, verdict{false, "queue vq: cpu request 3 exceeds capability 2"}, pods...)

	syncVolcanoStatus(t, c, vcc)
	var warnings int
	for _, e := range h.recorded() {
		if e.reason == "UnsupportedField" {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("%d UnsupportedField Events, want 1: %+v", warnings, h.recorded())
	}
	// The counts are of its PodGroups by phase, as vcctl counts them: the
	// status pass wrote big's Pending, which the informer delivers.
	vcc.reader.OnPodGroup(logger, big, vcc.pgs[types.NamespacedName{Namespace: "ns", Name: "big"}], false)
	syncVolcanoStatus(t, c, vcc)
	got := vcc.queues["vq"]
	if got.Status.Pending != 1 || got.Status.Inqueue != 0 || got.Status.State != vc.QueueStateOpen {
		t.Errorf("Volcano Queue status %+v, want 1 pending, Open", got.Status)
	}

	// Caldera's Queue of the same name wins over Volcano's.
	c.SetQueue(mkQueue("vq", capability("8")), false)
	vcc.reader.OnQueue(vq, false)
	pass(c, t0.Add(time.Second))
	wantAdmitted(t, c, verdict{true, ""}, pods...)
}

// fakeVolcano is Volcano's API as the status writer sees it, in memory:
// the objects by name, each write bumping the resourceVersion, a write
// with a stale one refused as a conflict.
type fakeVolcano struct {
	pgs    map[types.NamespacedName]*vc.PodGroup
	queues map[string]*vc.Queue
	// listers are what the cache reads, filled at every refresh.
	pgStore, qStore cache.Indexer
	// patches counts the PodGroup patches written, patchesOf per name.
	patches   int
	patchesOf map[string]int
	// reader is the Volcano adapter over the listers, feeding the cache.
	reader *volcano.Reader
}

func (f *fakeVolcano) bump(m *metav1.ObjectMeta, cur string) error {
	if m.ResourceVersion != cur {
		return apierrors.NewConflict(schema.GroupResource{Group: vc.GroupName}, m.Name, errors.New("stale"))
	}
	n, _ := strconv.Atoi(cur)
	m.ResourceVersion = strconv.Itoa(n + 1)
	return nil
}

func (f *fakeVolcano) GetPodGroup(_ context.Context, ns, name string) (*vc.PodGroup, error) {
	pg, ok := f.pgs[types.NamespacedName{Namespace: ns, Name: name}]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: vc.GroupName, Resource: "podgroups"}, name)
	}
	return pg.DeepCopy(), nil
}

func (f *fakeVolcano) UpdatePodGroup(ctx context.Context, pg *vc.PodGroup) error {
	cur, err := f.GetPodGroup(ctx, pg.Namespace, pg.Name)
	if err != nil {
		return err
	}
	cp := pg.DeepCopy()
	if err := f.bump(&cp.ObjectMeta, cur.ResourceVersion); err != nil {
		return err
	}
	f.pgs[types.NamespacedName{Namespace: pg.Namespace, Name: pg.Name}] = cp
	return nil
}

// PatchPodGroup applies a JSON merge patch as the API server does, a
// uid in the patch that is not the object's refused.
func (f *fakeVolcano) PatchPodGroup(ctx context.Context, ns, name string, patch []byte) error {
	cur, err := f.GetPodGroup(ctx, ns, name)
	if err != nil {
		return err
	}
	orig, err := json.Marshal(cur)
	if err != nil {
		return err
	}
	merged, err := jsonpatch.MergePatch(orig, patch)
	if err != nil {
		return err
	}
	out := &vc.PodGroup{}
	if err := json.Unmarshal(merged, out); err != nil {
		return err
	}
	if out.UID != cur.UID {
		return apierrors.NewInvalid(schema.GroupKind{Group: vc.GroupName, Kind: "PodGroup"}, name, nil)
	}
	f.patches++
	if f.patchesOf == nil {
		f.patchesOf = map[string]int{}
	}
	f.patchesOf[name]++
	return f.UpdatePodGroup(ctx, out)
}

func (f *fakeVolcano) CreateQueue(_ context.Context, q *vc.Queue) error {
	if _, ok := f.queues[q.Name]; ok {
		return apierrors.NewAlreadyExists(schema.GroupResource{Group: vc.GroupName, Resource: "queues"}, q.Name)
	}
	f.queues[q.Name] = q.DeepCopy()
	return nil
}

func (f *fakeVolcano) UpdateQueueStatus(_ context.Context, q *vc.Queue) error {
	cur, ok := f.queues[q.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: vc.GroupName, Resource: "queues"}, q.Name)
	}
	cp := cur.DeepCopy()
	cp.Status = q.Status
	if err := f.bump(&cp.ObjectMeta, q.ResourceVersion); err != nil {
		return err
	}
	f.queues[q.Name] = cp
	return nil
}

// refresh fills the listers from the objects, as the informers would.
func (f *fakeVolcano) refresh(t *testing.T) {
	t.Helper()
	for _, pg := range f.pgs {
		if err := f.pgStore.Update(pg.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range f.queues {
		if err := f.qStore.Update(q.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
}

// withVolcano gives the cache a Volcano adapter over the given objects, as
// its Watch does minus the informers.
func withVolcano(t *testing.T, c *Cache, objs ...any) *fakeVolcano {
	t.Helper()
	f := &fakeVolcano{pgs: map[types.NamespacedName]*vc.PodGroup{}, queues: map[string]*vc.Queue{},
		pgStore: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		qStore:  cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})}
	for _, o := range objs {
		switch o := o.(type) {
		case *vc.PodGroup:
			cp := o.DeepCopy()
			cp.ResourceVersion = "1"
			f.pgs[types.NamespacedName{Namespace: o.Namespace, Name: o.Name}] = cp
		case *vc.Queue:
			cp := o.DeepCopy()
			cp.ResourceVersion = "1"
			f.queues[o.Name] = cp
		}
	}
	f.refresh(t)
	f.reader = volcano.ReaderOver(f, vclisters.NewPodGroupLister(f.pgStore), vclisters.NewQueueLister(f.qStore), c)
	addAdapter(c, f.reader)
	return f
}

// syncVolcanoStatus runs one status pass and lets the listers catch up
// with what it wrote.
func syncVolcanoStatus(t *testing.T, c *Cache, f *fakeVolcano) {
	t.Helper()
	syncStatus(c)
	f.refresh(t)
}

func volcanoStatus(t *testing.T, f *fakeVolcano, name string) vc.PodGroupStatus {
	t.Helper()
	pg, err := f.GetPodGroup(context.Background(), "ns", name)
	if err != nil {
		t.Fatal(err)
	}
	return pg.Status
}
func hasCondition(s vc.PodGroupStatus, typ vc.PodGroupConditionType, reason, inMessage string) bool {
	return slices.ContainsFunc(s.Conditions, func(c vc.PodGroupCondition) bool {
		return c.Type == typ && c.Status == v1.ConditionTrue && c.Reason == reason && strings.Contains(c.Message, inMessage)
	})
}

// After a restart the phase tells what an admitted Volcano gang without
// pods is: Inqueue, about to get its pods (it reserves its minimum);
// Completed, done (it reserves nothing, and stays Completed).
func TestVolcanoGangAfterRestart(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("q", capability("8")))
	c.ApplyNode(logger, mkNode("n1", "16"))
	inqueue, done := mkVolcanoPG("ns", "inqueue", 2, "q", "3"), mkVolcanoPG("ns", "done", 2, "q", "3")
	inqueue.Status.Phase = vc.PodGroupInqueue
	done.Status = vc.PodGroupStatus{Phase: vc.PodGroupCompleted, Succeeded: 2}
	vcc := withVolcano(t, c, inqueue, done)
	c.SetGroup(logger, volcano.Spec(inqueue))
	c.SetGroup(logger, volcano.Spec(done))
	for _, name := range []string{"inqueue", "done"} {
		if u := unitOf(c, queue.GroupUnit("ns", name)); u == nil || !u.Admitted {
			t.Errorf("%s: unit %+v, want admitted from its phase", name, u)
		}
	}
	wantUsage(t, c, "q", 0, 3)
	pass(c, t0)
	syncVolcanoStatus(t, c, vcc)
	if got := volcanoStatus(t, vcc, "done"); got.Phase != vc.PodGroupCompleted || got.Succeeded != 2 {
		t.Errorf("done: %+v, want Completed with 2 succeeded kept", got)
	}
	if got := volcanoStatus(t, vcc, "inqueue"); got.Phase != vc.PodGroupInqueue {
		t.Errorf("inqueue: phase %q, want Inqueue", got.Phase)
	}
}
