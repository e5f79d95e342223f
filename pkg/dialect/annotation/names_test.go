package annotation

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

func TestPodGroupName(t *testing.T) {
	long := strings.Repeat("a", 70)
	sum := sha256.Sum256([]byte("uid-1"))
	suffix := "-" + hex.EncodeToString(sum[:])[:10]
	for _, tc := range []struct {
		kind, name, want string
	}{
		{"Job", "train", "job-train"},
		{"StatefulSet", "ray-worker", "statefulset-ray-worker"},
		{"ReplicaSet", strings.Repeat("b", 51), "replicaset-" + strings.Repeat("b", 51)}, // exactly 62
		{"Job", long, ("job-" + long)[:63-len(suffix)] + suffix},
	} {
		got := PodGroupName(tc.kind, tc.name, "uid-1")
		if got != tc.want {
			t.Errorf("PodGroupName(%s, %s) = %q, want %q", tc.kind, tc.name, got, tc.want)
		}
		if len(got) > 63 {
			t.Errorf("PodGroupName(%s, %s) has %d characters, more than 63", tc.kind, tc.name, len(got))
		}
	}
	// Owners that share a long prefix get different names.
	if a, b := PodGroupName("Job", long, "u1"), PodGroupName("Job", long, "u2"); a == b {
		t.Errorf("two owners with one long name share PodGroup %q", a)
	}
}

func TestGroupOf(t *testing.T) {
	yes := true
	ctrl := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "u", Controller: &yes}}
	notCtrl := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "u"}}
	for _, tc := range []struct {
		name   string
		ann    map[string]string
		owners []metav1.OwnerReference
		want   string
		ok     bool
	}{
		{"annotated", map[string]string{qapi.GangMinMemberAnnotation: "4"}, ctrl, "job-train", true},
		{"no annotation", nil, ctrl, "", false},
		{"not a number", map[string]string{qapi.GangMinMemberAnnotation: "two"}, ctrl, "", false},
		{"zero", map[string]string{qapi.GangMinMemberAnnotation: "0"}, ctrl, "", false},
		{"negative", map[string]string{qapi.GangMinMemberAnnotation: "-1"}, ctrl, "", false},
		{"no controller", map[string]string{qapi.GangMinMemberAnnotation: "2"}, notCtrl, "", false},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: tc.ann, OwnerReferences: tc.owners}}
		got, ok := GroupOf(pod)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: GroupOf = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
