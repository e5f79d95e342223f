package cache

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	pgfake "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned/fake"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/dialect/annotation"
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// ownedBy makes p a pod of controller kind/name (uid "uid-"+name).
func ownedBy(kind, name string) podOpt {
	return func(p *v1.Pod) {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: kind, Name: name, UID: types.UID("uid-" + name), Controller: &yes}}
	}
}

// annotated sets an annotation on p.
func annotated(k, v string) podOpt {
	return func(p *v1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func minMemberAnn(n string) podOpt { return annotated(qapi.GangMinMemberAnnotation, n) }

// GroupKeyOf: the label wins; else a valid annotation on a pod with a
// controller names its controller's PodGroup; else no group.
func TestGroupKeyOfImplicit(t *testing.T) {
	notController := func(p *v1.Pod) { p.OwnerReferences[0].Controller = nil }
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want gangbook.GroupKey
		ok   bool
	}{
		{"annotated Job pod", mkPod("ns", "p", "", ownedBy("Job", "train"), minMemberAnn("4")), key("ns", "job-train"), true},
		{"label wins", mkPod("ns", "p", "mine", ownedBy("Job", "train"), minMemberAnn("4")), key("ns", "mine"), true},
		{"plain Job pod", mkPod("ns", "p", "", ownedBy("Job", "train")), gangbook.GroupKey{}, false},
		{"not a number", mkPod("ns", "p", "", ownedBy("Job", "train"), minMemberAnn("two")), gangbook.GroupKey{}, false},
		{"zero", mkPod("ns", "p", "", ownedBy("Job", "train"), minMemberAnn("0")), gangbook.GroupKey{}, false},
		{"no owner", mkPod("ns", "p", "", minMemberAnn("2")), gangbook.GroupKey{}, false},
		{"owner not controller", mkPod("ns", "p", "", ownedBy("Job", "train"), notController, minMemberAnn("2")), gangbook.GroupKey{}, false},
	} {
		got, ok := gangbook.GroupKeyOf(tc.pod)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: GroupKeyOf = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func toCreateNames(ts []annotation.ToCreate) (out []string) {
	for _, t := range ts {
		out = append(out, t.Key.String())
	}
	slices.Sort(out)
	return out
}

// A gang by annotation without its PodGroup is handed out for creation
// with the first member's minMember, timeout and queue, once per
// recreateAfter; not once its PodGroup exists; again if the PodGroup is
// deleted while members remain; never once its members are gone.
func TestImplicitPodGroupsToCreate(t *testing.T) {
	c, _ := newTestCache(t)
	opts := []podOpt{ownedBy("Job", "train"), minMemberAnn("2"), annotated(qapi.GangTimeoutSecondsAnnotation, "30"),
		func(p *v1.Pod) { p.Labels = map[string]string{qapi.QueueLabel: "team-a"} }}
	p0, p1 := mkPod("ns", "p0", "", opts...), mkPod("ns", "p1", "", opts...)
	addAll(c, p0, p1)
	got := c.PodGroupsToCreate()
	if len(got) != 1 {
		t.Fatalf("to create %v, want ns/job-train", toCreateNames(got))
	}
	w := got[0]
	if w.Key.String() != "ns/job-train" || w.MinMember != 2 || w.ScheduleTimeoutSeconds == nil || *w.ScheduleTimeoutSeconds != 30 ||
		w.Queue != "team-a" || w.Owner.Kind != "Job" || w.Owner.Name != "train" || w.Owner.UID != "uid-train" {
		t.Errorf("to create %+v", w)
	}
	if got := c.PodGroupsToCreate(); len(got) != 0 {
		t.Errorf("handed out again at once: %v", toCreateNames(got))
	}
	// Waiting for the PodGroup, the members are not told it is missing.
	if work := c.GroupStatusWork(t0); len(work) != 1 || work[0].Notice.Reason != "" {
		t.Errorf("status work %+v, want no Event while the PodGroup is created", work)
	}
	pg := mkPG("ns", "job-train", 2)
	addPG(c, pg)
	addPG(c, pg)
	c.mu.Lock()
	later := c.implicit.ToCreate(time.Now().Add(annotation.RecreateAfter)) // past the wait of the create above
	c.mu.Unlock()
	if got := later; len(got) != 0 {
		t.Errorf("to create %v with the PodGroup present", toCreateNames(got))
	}
	delPG(c, pg)
	if got := toCreateNames(c.PodGroupsToCreate()); !slices.Equal(got, []string{"ns/job-train"}) {
		t.Errorf("to create %v after the PodGroup was deleted, want it again", got)
	}
	del(c, p0)
	del(c, p1)
	c.mu.Lock()
	left := c.implicit.Has(key("ns", "job-train").Named())
	later = c.implicit.ToCreate(time.Now().Add(annotation.RecreateAfter))
	c.mu.Unlock()
	if left || len(later) != 0 {
		t.Errorf("gang still in the book (%v) or handed out (%d) after the last member went", left, len(later))
	}
	// A hand-written PodGroup under the derived name: nothing to create.
	addPG(c, pg)
	add(c, p0)
	if got := c.PodGroupsToCreate(); len(got) != 0 {
		t.Errorf("to create %v next to an existing PodGroup", toCreateNames(got))
	}
}

// Bad input: each pod is told once, while it exists.
func TestImplicitNotices(t *testing.T) {
	c, _ := newTestCache(t)
	bad := mkPod("ns", "bad", "", ownedBy("Job", "x"), minMemberAnn("two"))
	orphan := mkPod("ns", "orphan", "", minMemberAnn("2"))
	first := mkPod("ns", "first", "", ownedBy("Job", "train"), minMemberAnn("2"))
	other := mkPod("ns", "other", "", ownedBy("Job", "train"), minMemberAnn("3"))
	badTimeout := mkPod("ns", "late", "", ownedBy("Job", "train"), minMemberAnn("2"), annotated(qapi.GangTimeoutSecondsAnnotation, "soon"))
	plain := mkPod("ns", "plain", "", ownedBy("Job", "x"))
	addAll(c, bad, orphan, first, other, badTimeout, plain)
	add(c, next(bad, boundTo("n1"))) // an update tells nothing new
	told := map[string]string{}
	for _, n := range c.PodNotices() {
		told[n.Pod.Name] = n.Reason
	}
	want := map[string]string{
		"bad":    annotation.ReasonInvalidGang,
		"orphan": annotation.ReasonInvalidGang,
		"other":  annotation.ReasonGangAnnotationMismatch,
		"late":   annotation.ReasonGangAnnotationMismatch,
	}
	if len(told) != len(want) {
		t.Errorf("told %v, want %v", told, want)
	}
	for n, r := range want {
		if told[n] != r {
			t.Errorf("pod %s told %q, want %q", n, told[n], r)
		}
	}
	if n := c.PodNotices(); len(n) != 0 {
		t.Errorf("told again: %+v", n)
	}
	// The first member decides the gang's minimum.
	if s := c.PodGroupsToCreate(); len(s) != 1 || s[0].MinMember != 2 || s[0].ScheduleTimeoutSeconds != nil {
		t.Errorf("to create %+v, want minMember 2 and no timeout", s)
	}
	// Invalid pods are scheduled on their own: no group has them.
	c.mu.RLock()
	_, grouped := c.memberOf[bad.UID]
	c.mu.RUnlock()
	if grouped {
		t.Error("a pod with an invalid gang annotation is a gang member")
	}
	// A pod deleted and created again under the same UID is told again
	// (only the UID is remembered, and forgotten with the pod).
	del(c, bad)
	add(c, bad)
	if n := c.PodNotices(); len(n) != 1 || n[0].Pod.Name != "bad" {
		t.Errorf("notices after the pod came back: %+v", n)
	}
}

// The writer over the cache: it creates the PodGroup once, posts the
// notices as Warning Events on the pods, and the gang waits for its
// PodGroup and then for its members like a labelled one.
func TestImplicitCreateThroughWriter(t *testing.T) {
	c, h := newTestCache(t)
	pgc := pgfake.NewSimpleClientset()
	withPodGroups(c, pgc, nil)
	p0 := mkPod("ns", "p0", "", ownedBy("Job", "train"), minMemberAnn("2"))
	p1 := mkPod("ns", "p1", "", ownedBy("Job", "train"), minMemberAnn("2"))
	bad := mkPod("ns", "bad", "", ownedBy("Job", "x"), minMemberAnn("-3"))
	addAll(c, p0, bad)
	if _, ok, _ := c.Enqueueable(p0); ok {
		t.Error("a member was enqueueable before its PodGroup exists")
	}
	syncStatus(c)
	syncStatus(c)
	pgs, err := pgc.SchedulingV1alpha1().PodGroups("ns").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pgs.Items) != 1 || pgs.Items[0].Name != "job-train" || pgs.Items[0].Spec.MinMember != 2 ||
		pgs.Items[0].Labels[qapi.ManagedByLabel] != qapi.ManagedByCaldera {
		t.Fatalf("PodGroups %+v, want one job-train, minMember 2, managed", pgs.Items)
	}
	var warnings []string
	for _, e := range h.recorded() {
		if e.eventType == v1.EventTypeWarning {
			warnings = append(warnings, e.name+" "+e.reason)
		}
	}
	if want := []string{"ns/bad InvalidGang"}; !slices.Equal(warnings, want) {
		t.Errorf("warnings %v, want %v", warnings, want)
	}
	// The informer delivers the object: the gang now waits for members.
	addPG(c, &pgs.Items[0])
	if _, ok, _ := c.Enqueueable(p0); ok {
		t.Error("a gang of 2 with one member was enqueueable")
	}
	add(c, p1)
	if _, ok, _ := c.Enqueueable(p0); !ok {
		t.Error("the gang with its 2 members is not enqueueable")
	}
	wantCounts(t, c, key("ns", "job-train"), &gang.Counts{Members: 2, Active: 2, Pending: 2})
}

// Finished members by annotation count as the finished-member informer
// delivers them: a completed Job's PodGroup is Succeeded, not Pending.
func TestImplicitFinishedMembers(t *testing.T) {
	c, _ := newTestCache(t)
	opts := []podOpt{ownedBy("Job", "train"), minMemberAnn("2")}
	p0, p1 := mkPod("ns", "p0", "", opts...), mkPod("ns", "p1", "", opts...)
	addPG(c, mkPG("ns", "job-train", 2))
	addAll(c, p0, p1)
	for _, p := range []*v1.Pod{p0, p1} {
		r := next(p, boundTo("n1"), phase(v1.PodRunning))
		update(c, p, r)
		update(c, r, next(r, phase(v1.PodSucceeded)))
	}
	wantCounts(t, c, key("ns", "job-train"), &gang.Counts{Members: 2, Bound: 2, Succeeded: 2})
	c.mu.RLock()
	ph := gang.PhaseOf(c.groups[key("ns", "job-train")].Spec, c.groups[key("ns", "job-train")].Counts)
	c.mu.RUnlock()
	if ph != gang.PhaseFinished {
		t.Errorf("phase %s, want Finished", ph)
	}
}

// A Job recreated under its name (kubectl replace --force, a Helm hook):
// the garbage collector deletes the PodGroup owned by the deleted Job, and
// the one created again is owned by the new Job, whose pods have joined,
// even while the old pods are still terminating; never by the deleted
// one, which the collector would delete again, round after round.
func TestImplicitPodGroupFollowsTheCurrentOwner(t *testing.T) {
	c, _ := newTestCache(t)
	oldPods := []*v1.Pod{mkPod("ns", "old0", "", ownedBy("Job", "train"), minMemberAnn("2")),
		mkPod("ns", "old1", "", ownedBy("Job", "train"), minMemberAnn("2"))}
	addAll(c, oldPods...)
	addPG(c, mkPG("ns", "job-train", 2))
	// The Job is deleted and made again: its pods terminate, new ones come.
	renewed := func(p *v1.Pod) { p.OwnerReferences[0].UID = "uid-train-2" }
	for _, p := range oldPods {
		update(c, p, next(p, func(p *v1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} }))
	}
	newPods := []*v1.Pod{mkPod("ns", "new0", "", ownedBy("Job", "train"), renewed, minMemberAnn("2")),
		mkPod("ns", "new1", "", ownedBy("Job", "train"), renewed, minMemberAnn("2"))}
	addAll(c, newPods...)
	// The old Job's pods, terminating, are not members of the new Job's
	// gang: they would count as placed and let the new pods past the
	// barrier one by one.
	if g := c.groups[key("ns", "job-train")]; len(g.Members) != 2 || g.Members["uid-ns-new0"] == nil || g.Members["uid-ns-new1"] == nil {
		t.Errorf("members of the recreated gang: %d, want only the new Job's 2", len(g.Members))
	}
	update(c, oldPods[0], next(oldPods[0], func(p *v1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} }, boundTo("n1")))
	if _, ok := c.memberOf["uid-ns-old0"]; ok {
		t.Errorf("an update of an old terminating pod made it a member again")
	}
	c.onPodGroupDelete(logger, mkPG("ns", "job-train", 2)) // the collector: its owner is gone
	got := c.PodGroupsToCreate()
	if len(got) != 1 || got[0].Owner.UID != "uid-train-2" {
		t.Fatalf("to create %+v, want ns/job-train owned by the new Job (uid-train-2)", got)
	}
	for _, p := range oldPods {
		del(c, p)
	}
	c.onPodGroupDelete(logger, mkPG("ns", "job-train", 2))
	if got := c.PodGroupsToCreate(); len(got) != 1 || got[0].Owner.UID != "uid-train-2" {
		t.Errorf("once the old pods are gone the gang's PodGroup would be made as %+v, want owned by the new Job", got)
	}
}
