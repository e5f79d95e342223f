package podslim

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/caldera-sched/caldera/pkg/convert"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// rl is a resource list of name, quantity pairs.
func rl(pairs ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[v1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// TestSlimPodKeepsWhatTheCacheReads: the finished-member informer's
// transform must not change a request, a phase, a priority or anything else
// the cache reads, for every shape of pod PodRequests handles, and must be
// idempotent.
func TestSlimPodKeepsWhatTheCacheReads(t *testing.T) {
	now := metav1.Now()
	base := func() *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: "m-0", Namespace: "ns", UID: types.UID("u"), ResourceVersion: "7", Generation: 2,
				CreationTimestamp: now, Labels: map[string]string{gangbook.PodGroupLabel: "g", "queue": "q"},
				Annotations:     map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...a large document...}"},
				OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: "j", UID: "j"}},
				ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
			},
			Spec: v1.PodSpec{
				SchedulerName: "caldera-scheduler", NodeName: "n1", Priority: ptr.To[int32](5),
				PriorityClassName: "batch", PreemptionPolicy: ptr.To(v1.PreemptLowerPriority),
				Containers: []v1.Container{{
					Name: "main", Image: "trainer:1", Command: []string{"python", "train.py"},
					Env:       []v1.EnvVar{{Name: "RANK", Value: "0"}},
					Resources: v1.ResourceRequirements{Requests: rl("cpu", "2", "memory", "4Gi", "nvidia.com/gpu", "1"), Limits: rl("nvidia.com/gpu", "1")},
				}},
				Volumes: []v1.Volume{{Name: "data"}},
			},
			Status: v1.PodStatus{Phase: v1.PodRunning, StartTime: &now, NominatedNodeName: "n1",
				Conditions: []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}}},
		}
	}
	cases := map[string]func(*v1.Pod){
		"plain": func(*v1.Pod) {},
		"init containers, a sidecar among them, and overhead": func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{
				{Name: "setup", Resources: v1.ResourceRequirements{Requests: rl("cpu", "4", "memory", "1Gi")}},
				{Name: "proxy", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways), Resources: v1.ResourceRequirements{Requests: rl("cpu", "500m")}},
			}
			p.Spec.Overhead = rl("cpu", "100m", "memory", "64Mi")
		},
		"pod-level resources": func(p *v1.Pod) {
			p.Spec.Resources = &v1.ResourceRequirements{Requests: rl("cpu", "3", "memory", "8Gi")}
		},
		"resized in place": func(p *v1.Pod) {
			p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "main", Image: "trainer:1", Ready: true,
				AllocatedResources: rl("cpu", "3", "memory", "4Gi"),
				Resources:          &v1.ResourceRequirements{Requests: rl("cpu", "3", "memory", "4Gi")}}}
		},
		"terminating": func(p *v1.Pod) {
			p.DeletionTimestamp = &now
			p.DeletionGracePeriodSeconds = ptr.To[int64](30)
			p.Status.Phase = v1.PodSucceeded
		},
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			full := base()
			edit(full)
			obj, err := Pod(full.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			slim := obj.(*v1.Pod)
			if got, want := convert.PodRequest(slim), convert.PodRequest(full); !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("request %v after slimming, want %v", got, want)
			}
			if slim.Status.Phase != full.Status.Phase || gangbook.PodPriority(slim) != gangbook.PodPriority(full) {
				t.Errorf("phase or priority changed: %v/%d, want %v/%d", slim.Status.Phase, gangbook.PodPriority(slim), full.Status.Phase, gangbook.PodPriority(full))
			}
			keep := full.DeepCopy()
			keep.Annotations, keep.ManagedFields = nil, nil
			keep.Spec = v1.PodSpec{}
			slimMeta := slim.DeepCopy()
			slimMeta.Spec = v1.PodSpec{}
			keep.Status.ContainerStatuses, slimMeta.Status.ContainerStatuses = nil, nil
			if !equality.Semantic.DeepEqual(slimMeta.ObjectMeta, keep.ObjectMeta) {
				t.Errorf("metadata after slimming:\n%+v\nwant\n%+v", slimMeta.ObjectMeta, keep.ObjectMeta)
			}
			if s := slim.Spec; s.NodeName != full.Spec.NodeName || s.SchedulerName != full.Spec.SchedulerName ||
				s.PriorityClassName != full.Spec.PriorityClassName || *s.PreemptionPolicy != *full.Spec.PreemptionPolicy {
				t.Errorf("scheduling fields changed: %+v", s)
			}
			if st := slim.Status; st.NominatedNodeName != full.Status.NominatedNodeName || !st.StartTime.Equal(full.Status.StartTime) ||
				len(st.Conditions) != len(full.Status.Conditions) {
				t.Errorf("status fields changed: %+v", st)
			}
			if len(slim.Spec.Containers[0].Env) != 0 || slim.Spec.Containers[0].Image != "" || slim.Spec.Volumes != nil {
				t.Errorf("the slim pod still holds what the cache never reads: %+v", slim.Spec)
			}
			again, _ := Pod(slim.DeepCopy())
			if !equality.Semantic.DeepEqual(again, slim) {
				t.Error("Pod is not idempotent")
			}
		})
	}
	// Tombstones pass through.
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/m-0", Obj: base()}
	if got, _ := Pod(tomb); got != any(tomb) {
		t.Errorf("Pod changed a tombstone: %v", got)
	}
}

// TestSlimJobPod: the finished Job pods informer keeps an annotated pod's
// gang annotations (GroupKeyOf reads them) and cuts other pods to their
// identity; both are idempotent.
func TestSlimJobPod(t *testing.T) {
	yes := true
	owner := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "j", Controller: &yes}}
	annotated := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "ua", OwnerReferences: owner, Annotations: map[string]string{
			"scheduling.caldera.dev/gang-min-member": "2", "scheduling.caldera.dev/gang-timeout-seconds": "30", "other": "big"}},
		Status: v1.PodStatus{Phase: v1.PodSucceeded},
	}
	plain := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "up", OwnerReferences: owner, Annotations: map[string]string{"other": "big"}},
		Status:     v1.PodStatus{Phase: v1.PodSucceeded},
	}
	a, _ := JobPod(annotated)
	ap := a.(*v1.Pod)
	if k, ok := gangbook.GroupKeyOf(ap); !ok || k != (gangbook.GroupKey{Namespace: "ns", Name: "job-train"}) || len(ap.Annotations) != 2 || ap.Status.Phase != v1.PodSucceeded {
		t.Errorf("slimmed annotated pod: group %v %v, annotations %v, phase %s", k, ok, ap.Annotations, ap.Status.Phase)
	}
	p, _ := JobPod(plain)
	pp := p.(*v1.Pod)
	if want := (&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "up"}}); !equality.Semantic.DeepEqual(pp, want) {
		t.Errorf("slimmed plain Job pod %+v, want its identity only", pp)
	}
	for _, o := range []*v1.Pod{ap, pp} {
		again, _ := JobPod(o)
		if !equality.Semantic.DeepEqual(again, o) {
			t.Errorf("JobPod is not idempotent on %s", o.Name)
		}
	}
}

// TestSlimJoinedPodKeepsUpstreamMembers: a finished member of an upstream
// PodGroup stays a member of its group once slimmed (the copy keeps
// spec.schedulingGroup), and a finished pod that joins no group keeps only
// its identity.
func TestSlimJoinedPodKeepsUpstreamMembers(t *testing.T) {
	member := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "m0", Namespace: "ns", UID: "m0", Annotations: map[string]string{"other": "big"}},
		Spec:       v1.PodSpec{SchedulingGroup: &v1.PodSchedulingGroup{PodGroupName: ptr.To("g")}},
		Status:     v1.PodStatus{Phase: v1.PodSucceeded},
	}
	slim, err := JoinedPod(member)
	if err != nil {
		t.Fatal(err)
	}
	if key, ok := gangbook.GroupKeyOf(slim.(*v1.Pod)); !ok || key != (gangbook.GroupKey{Namespace: "ns", Name: "g"}) {
		t.Errorf("slimmed member: GroupKeyOf = %v, %v; want ns/g", key, ok)
	}
	other := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "p", Annotations: map[string]string{"other": "big"}},
		Status: v1.PodStatus{Phase: v1.PodSucceeded}}
	got, _ := JoinedPod(other)
	if want := (&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "p"}}); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("slimmed pod of no group %+v, want its identity only", got)
	}
}
