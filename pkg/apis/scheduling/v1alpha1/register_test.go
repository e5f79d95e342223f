package v1alpha1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestAddToScheme(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for obj, kind := range map[runtime.Object]string{&Queue{}: "Queue", &QueueList{}: "QueueList"} {
		gvks, _, err := scheme.ObjectKinds(obj)
		if err != nil {
			t.Fatalf("%T: %v", obj, err)
		}
		if len(gvks) != 1 || gvks[0] != SchemeGroupVersion.WithKind(kind) {
			t.Errorf("%T registered as %v, want %v", obj, gvks, SchemeGroupVersion.WithKind(kind))
		}
	}
	if got := Resource("queues").String(); got != "queues.scheduling.caldera.dev" {
		t.Errorf("Resource(queues) = %s", got)
	}
}

func TestDeepCopyIsIndependent(t *testing.T) {
	q := &Queue{
		ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Spec: QueueSpec{
			Capability:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Reclaimable: new(bool),
		},
		Status: QueueStatus{Conditions: []metav1.Condition{{Type: QueueConditionOverDeserved}}},
	}
	c := q.DeepCopy()
	c.Spec.Capability[corev1.ResourceCPU] = resource.MustParse("3")
	*c.Spec.Reclaimable = true
	c.Status.Conditions[0].Type = QueueConditionInvalidParent
	if q.Spec.Capability.Cpu().String() != "2" || *q.Spec.Reclaimable || q.Status.Conditions[0].Type != QueueConditionOverDeserved {
		t.Fatalf("DeepCopy shares memory with the original: %+v", q)
	}
}

func TestKeysAreValid(t *testing.T) {
	for _, key := range []string{QueueLabel, AdmittedAtAnnotation} {
		if errs := validation.IsQualifiedName(key); len(errs) != 0 {
			t.Errorf("%q: %v", key, errs)
		}
	}
	for _, c := range []string{QueueConditionInvalidParent, QueueConditionOverDeserved, QueueConditionOverCapability, QueueConditionGuaranteeUnsatisfiable} {
		if errs := validation.IsQualifiedName(c); len(errs) != 0 {
			t.Errorf("condition type %q: %v", c, errs)
		}
	}
}
