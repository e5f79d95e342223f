package random_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/dialect/annotation"
	"github.com/caldera-sched/caldera/pkg/runlimit"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// The generator's actions against the API. They tolerate NotFound: the
// scheduler may have evicted what an action touches, and that is part of
// the scenario, not an error of the harness.

func (q queueSpec) apiSpec() qapi.QueueSpec {
	spec := qapi.QueueSpec{Weight: q.Weight, Reclaimable: ptr.To(q.Reclaimable), Parent: q.Parent}
	if q.Capability > 0 {
		spec.Capability = v1.ResourceList{v1.ResourceCPU: resource.MustParse(fmt.Sprint(q.Capability))}
	}
	if q.Guarantee > 0 {
		spec.Guarantee = v1.ResourceList{v1.ResourceCPU: resource.MustParse(fmt.Sprint(q.Guarantee))}
	}
	return spec
}

// ownerKind is the kind of the object the harness creates as the controller
// of an annotated gang's pods: the harness runs no controllers and no
// garbage collector, so a ConfigMap is an owner whose presence does nothing.
const ownerKind = "ConfigMap"

// podGroupName is the name of the group's PodGroup: the hand-written one's,
// or the one the scheduler creates for an annotated gang (named after the
// owner, a ConfigMap named like the group; names are short, so the owner's
// UID never enters the name).
func (g groupSpec) podGroupName() string {
	if g.Annotated {
		return annotation.PodGroupName(ownerKind, g.Name, "")
	}
	return g.Name
}

// pods builds the group's pods. The queue label is on the pods too (and on
// the PodGroup), so every pod's queue is unambiguous to the model, whatever
// happens to its PodGroup. An annotated gang's pods get the gang annotations
// and the controller ownerReference owner instead of the pod-group label.
func (r *run) pods(g groupSpec, owner *metav1.OwnerReference) []*v1.Pod {
	var out []*v1.Pod
	for i := range g.Members {
		name := g.Name
		if !g.Singleton {
			name = fmt.Sprintf("%s-%d", g.Name, i)
		}
		b := harness.Pod(r.ns, name).CPU(fmt.Sprint(g.CPU)).
			Labels(map[string]string{qapi.QueueLabel: g.Queue, groupLabel: g.Name})
		if !g.Singleton && !g.Annotated {
			b = b.Group(g.Name)
		}
		if g.Priority != 0 {
			b = b.Priority(g.Priority)
		}
		if g.Selector != nil {
			b = b.NodeSelector(g.Selector)
		}
		pod := b.Obj()
		if g.Annotated {
			pod.Annotations = map[string]string{
				qapi.GangMinMemberAnnotation:      fmt.Sprint(g.MinMember),
				qapi.GangTimeoutSecondsAnnotation: fmt.Sprint(g.Timeout),
			}
			pod.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		if g.Gated && i == g.Members-1 {
			pod.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "random.caldera.dev/held"}}
		}
		declareLimit(pod, g, i)
		out = append(out, pod)
	}
	return out
}

func (r *run) do(ctx context.Context, t *testing.T, a action) error {
	r.trace.logf("%s", r.describeAction(a))
	pods := r.env.Client.CoreV1().Pods(r.ns)
	pgs := r.env.PGClient.SchedulingV1alpha1().PodGroups(r.ns)
	var g groupSpec
	if a.Group >= 0 {
		g = r.sc.Groups[a.Group]
	}
	if a.Kind != actKill { // a restart is the run's restarts
		h := happening{at: time.Now(), kind: string(a.Kind), what: string(a.Kind) + " " + g.Name}
		if a.Group >= 0 {
			h.group, h.queue, h.prio = g.Name, g.Queue, g.Priority
		} else {
			h.what = r.describeAction(a)
		}
		r.happened(h)
	}
	switch a.Kind {
	case actSubmit, actUngate, actMinMember:
		// New demand: the deserved shares move (no-thrash).
		r.mu.Lock()
		r.demand = append(r.demand, time.Now())
		r.mu.Unlock()
	}
	switch a.Kind {
	case actSubmit:
		var owner *metav1.OwnerReference
		switch {
		case g.Annotated:
			// A new owner each submission, as a Job created again has a
			// new UID; the scheduler creates the PodGroup.
			cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: g.Name}}
			cm, err := r.env.Client.CoreV1().ConfigMaps(r.ns).Create(ctx, cm, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			owner = &metav1.OwnerReference{APIVersion: "v1", Kind: ownerKind, Name: cm.Name, UID: cm.UID, Controller: ptr.To(true)}
			r.mu.Lock()
			r.owners[g.Name] = cm.UID
			r.mu.Unlock()
			r.trace.logf("  owner %s/%s uid %s", ownerKind, cm.Name, cm.UID)
		case !g.Singleton:
			pg := harness.PodGroup(r.ns, g.Name, int32(g.MinMember), harness.PGTimeout(g.Timeout))
			pg.Labels = map[string]string{qapi.QueueLabel: g.Queue}
			if g.LimitVia == limitGroupAnnot {
				pg.Annotations = map[string]string{runlimit.Annotation: fmt.Sprint(g.Limit)}
			}
			if _, err := pgs.Create(ctx, pg, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		for _, p := range r.pods(g, owner) {
			r.env.CreatePod(t, p)
		}
	case actComplete:
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: groupLabel + "=" + g.Name})
		if err != nil {
			return err
		}
		n := 0
		for i := range list.Items {
			p := &list.Items[i]
			if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || p.Status.Phase == v1.PodSucceeded {
				continue
			}
			if err := r.setPhase(ctx, p.Name, v1.PodSucceeded); err != nil {
				return err
			}
			n++
		}
		r.trace.logf("  %d pods of %s succeeded", n, g.Name)
	case actDelete:
		// By UID: the group may be submitted again under the same names,
		// and the new pods' deletions are evictions again.
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: groupLabel + "=" + g.Name})
		if err != nil {
			return err
		}
		r.mu.Lock()
		for i := range list.Items {
			r.delUIDs[string(list.Items[i].UID)] = true
		}
		r.mu.Unlock()
		now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
		if err := pods.DeleteCollection(ctx, now, metav1.ListOptions{LabelSelector: groupLabel + "=" + g.Name}); err != nil {
			return err
		}
		if g.Annotated {
			// What the garbage collector does once the owner is gone: its
			// dependents go. The PodGroup is deleted here and, should the
			// scheduler create it again from a view that still had members,
			// by collectGarbage.
			r.mu.Lock()
			uid, ok := r.owners[g.Name]
			if ok {
				r.goneOwners[uid] = true
			}
			r.mu.Unlock()
			if ok {
				err := r.env.Client.CoreV1().ConfigMaps(r.ns).Delete(ctx, g.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
				if err != nil && !apierrors.IsNotFound(err) {
					return err
				}
			}
		}
		if !g.Singleton {
			if err := pgs.Delete(ctx, g.podGroupName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	case actDeletePod:
		name := fmt.Sprintf("%s-%d", g.Name, a.Arg)
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.delUIDs[string(p.UID)] = true
		r.mu.Unlock()
		err = pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
	case actUngate:
		name := fmt.Sprintf("%s-%d", g.Name, g.Members-1)
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Spec.SchedulingGates = nil
			_, err = pods.Update(ctx, p, metav1.UpdateOptions{})
			return err
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	case actMinMember:
		// An annotated gang's existing pods cannot change their annotation:
		// the change goes to the PodGroup the scheduler created, as a user
		// would edit it (docs/gangs.md, Limits). Not created yet: NotFound.
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			pg, err := pgs.Get(ctx, g.podGroupName(), metav1.GetOptions{})
			if err != nil {
				return err
			}
			pg.Spec.MinMember = int32(a.Arg)
			_, err = pgs.Update(ctx, pg, metav1.UpdateOptions{})
			return err
		})
	case actRelabel:
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := r.env.Client.CoreV1().Nodes().Get(ctx, r.nodes[a.Arg], metav1.GetOptions{})
			if err != nil {
				return err
			}
			if n.Labels[diskLabel] == diskSSD {
				delete(n.Labels, diskLabel)
			} else {
				n.Labels[diskLabel] = diskSSD
			}
			_, err = r.env.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			return err
		})
	case actKill:
		r.mu.Lock()
		old := r.proc
		r.mu.Unlock()
		killed := time.Now()
		old.Kill(t)
		r.trace.logf("  killed scheduler process %d", old.Pid())
		p := r.env.StartSchedulerProcess(t, r.sc.schedulerOptions()...)
		ready := time.Now()
		r.mu.Lock()
		r.proc, r.ready = p, ready
		r.restarts = append(r.restarts, [2]time.Time{killed, ready})
		r.mu.Unlock()
		r.trace.logf("  scheduler process %d ready, %v after the kill", p.Pid(), ready.Sub(killed).Round(time.Millisecond))
	}
	return nil
}

// setPhase plays kubelet for one pod: a status update, retried on conflict.
func (r *run) setPhase(ctx context.Context, name string, phase v1.PodPhase) error {
	return r.setPhaseOf(ctx, name, "", phase)
}

// setPhaseOf is setPhase for the pod of that uid only ("" for any): a group
// submitted again has new pods of the same names.
func (r *run) setPhaseOf(ctx context.Context, name string, uid types.UID, phase v1.PodPhase) error {
	pods := r.env.Client.CoreV1().Pods(r.ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if uid != "" && p.UID != uid || p.DeletionTimestamp != nil || p.Status.Phase == phase {
			return nil
		}
		p.Status.Phase = phase
		_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// collectGarbage plays the garbage collector for the PodGroups the scheduler
// created: one whose owner the generator deleted goes, by UID (a group
// submitted again has a PodGroup of the same name with a new owner). The
// scheduler may create such a PodGroup again after the delete action, from a
// view that still had the deleted members; a real cluster's collector
// deletes it then, and so does this, on each check's list.
func (r *run) collectGarbage(ctx context.Context, pgs []*v1alpha1.PodGroup) {
	for _, pg := range pgs {
		if pg.DeletionTimestamp != nil || !r.ownerGone(pg.OwnerReferences) {
			continue
		}
		err := r.env.PGClient.SchedulingV1alpha1().PodGroups(r.ns).Delete(ctx, pg.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pg.UID}})
		if err == nil {
			r.trace.logf("  collected PodGroup %s (uid %s): its owner is gone", pg.Name, pg.UID)
		} else if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
			r.trace.logf("  collecting PodGroup %s: %v", pg.Name, err)
		}
	}
}

func (r *run) ownerGone(refs []metav1.OwnerReference) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ref := range refs {
		if r.goneOwners[ref.UID] {
			return true
		}
	}
	return false
}

// generatorDeleted says whether the generator deleted p (so its deletion is
// not an eviction).
func (r *run) generatorDeleted(p *v1.Pod) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.delUIDs[string(p.UID)]
}
