package random_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

// TestSnapshotAnnotatedGang: the model groups a gang asked for by annotation
// as the scheduler does (gangbook.GroupKeyOf), takes minMember and timeout from
// the annotations until the created PodGroup exists and from the PodGroup
// after, and names the gang's incarnation by its owner.
func TestSnapshotAnnotatedGang(t *testing.T) {
	g := groupSpec{Name: "g1", Queue: "q", Members: 3, MinMember: 2, CPU: 1, Timeout: 7, Annotated: true}
	owner := &metav1.OwnerReference{APIVersion: "v1", Kind: ownerKind, Name: "g1", UID: "owner-1", Controller: ptr.To(true)}
	r := &run{ns: "ns"}
	pods := r.pods(g, owner)

	s := newSnapshot(nil, nil, pods, nil, nil)
	got := s.Groups["configmap-g1"]
	if got == nil || len(s.Groups) != 1 {
		t.Fatalf("groups %v, want only configmap-g1", s.Groups)
	}
	if !got.Gang || got.MinMember != 2 || got.Timeout != 7 || got.Queue != "q" || got.UID != "owner-1" || len(got.Pods) != 3 {
		t.Errorf("before its PodGroup: %+v", got)
	}
	if need, ok := got.eligible(); !ok || need != 2 {
		t.Errorf("eligible = %d, %v; want 2, true", need, ok)
	}

	// The created PodGroup, its minMember since changed (the minmember
	// action), left by an earlier owner: its spec counts, the pods' owner
	// names the incarnation.
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: g.podGroupName(), UID: "pg-1",
			Labels:          map[string]string{qapi.ManagedByLabel: qapi.ManagedByCaldera, qapi.QueueLabel: "q"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: ownerKind, Name: "g1", UID: "owner-0"}},
		},
		Spec: v1alpha1.PodGroupSpec{MinMember: 3, ScheduleTimeoutSeconds: ptr.To[int32](9)},
	}
	s = newSnapshot(nil, nil, pods, []*v1alpha1.PodGroup{pg}, nil)
	got = s.Groups["configmap-g1"]
	if got == nil || got.MinMember != 3 || got.Timeout != 9 || got.UID != "owner-1" || len(got.Pods) != 3 {
		t.Errorf("with its PodGroup: %+v", got)
	}
	for _, p := range s.Pods {
		if p.Group != "configmap-g1" {
			t.Errorf("pod %s in group %q", p.Name, p.Group)
		}
	}

	// Labelled gangs and singletons keep their names.
	plain := r.pods(groupSpec{Name: "g2", Queue: "q", Members: 2, MinMember: 2, CPU: 1}, nil)
	single := r.pods(groupSpec{Name: "s3", Queue: "q", Singleton: true, Members: 1, MinMember: 1, CPU: 1}, nil)
	s = newSnapshot(nil, nil, append(plain, single...), nil, nil)
	if _, ok := s.Groups["g2"]; ok {
		t.Errorf("a labelled gang without its PodGroup is in the model: %+v", s.Groups["g2"])
	}
	if got := s.Groups["s3"]; got == nil || got.Gang {
		t.Errorf("singleton: %+v", got)
	}
}
