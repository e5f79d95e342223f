// Package queueapi_test checks the Queue CRD (manifests/crds/
// scheduling.caldera.dev_queues.yaml, generated from pkg/apis/scheduling/
// v1alpha1) against a real kube-apiserver: defaults, OpenAPI and CEL
// validation, the status subresource and the kubectl printer columns.
package queueapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"

	applyv1alpha1 "github.com/caldera-sched/caldera/pkg/apis/generated/applyconfiguration/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned"
	calderav1alpha1 "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

const crdName = "queues.scheduling.caldera.dev"

func TestQueueAPI(t *testing.T) {
	env := harness.Start(t)
	client := versioned.NewForConfigOrDie(env.Config)
	queues := client.SchedulingV1alpha1().Queues()
	dyn := env.Dynamic.Resource(calderav1alpha1.SchemeGroupVersion.WithResource("queues"))

	// create makes a Queue through the typed client and deletes it at the end
	// of the (sub)test.
	create := func(t *testing.T, q *calderav1alpha1.Queue) *calderav1alpha1.Queue {
		t.Helper()
		got, err := queues.Create(t.Context(), q, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating valid Queue %s: %v", q.Name, err)
		}
		t.Cleanup(func() {
			// t.Context is already canceled when cleanups run.
			if err := queues.Delete(context.Background(), q.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting Queue %s: %v", q.Name, err)
			}
		})
		return got
	}

	t.Run("an empty spec gets the defaults", func(t *testing.T) {
		got := create(t, &calderav1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "defaults"}})
		want := calderav1alpha1.QueueSpec{
			Weight:      calderav1alpha1.DefaultQueueWeight,
			Reclaimable: ptr.To(true),
			Priority:    0,
			State:       calderav1alpha1.QueueStateOpen,
		}
		if !reflect.DeepEqual(got.Spec, want) {
			t.Fatalf("defaulted spec = %+v, want %+v", got.Spec, want)
		}

		// A Queue without any spec (kubectl apply of a bare object) too.
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion(calderav1alpha1.SchemeGroupVersion.String())
		obj.SetKind("Queue")
		obj.SetName("no-spec")
		created, err := dyn.Create(t.Context(), obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating a Queue without spec: %v", err)
		}
		t.Cleanup(func() { _ = dyn.Delete(context.Background(), "no-spec", metav1.DeleteOptions{}) })
		spec, _, _ := unstructured.NestedMap(created.Object, "spec")
		wantSpec := map[string]any{"weight": int64(1), "state": "Open", "reclaimable": true, "priority": int64(0)}
		if !reflect.DeepEqual(spec, wantSpec) {
			t.Fatalf("spec of a Queue created without one = %v, want %v", spec, wantSpec)
		}
	})

	t.Run("a full valid spec round-trips", func(t *testing.T) {
		create(t, &calderav1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "team-parent"}})
		spec := calderav1alpha1.QueueSpec{
			Weight: calderav1alpha1.MaxQueueWeight,
			Capability: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("2"),
				corev1.ResourceMemory: resource.MustParse("8Gi"),
			},
			Guarantee: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("2000m"), // equal, in other units
				corev1.ResourceMemory: resource.MustParse("1Gi"),
				"nvidia.com/gpu":      resource.MustParse("1"), // not capped: allowed
				corev1.ResourcePods:   resource.MustParse("0"),
			},
			Reclaimable: ptr.To(false),
			Parent:      "team-parent",
			Priority:    -5,
			State:       calderav1alpha1.QueueStateClosed,
		}
		got := create(t, &calderav1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: spec})
		if !equalSpec(got.Spec, spec) {
			t.Fatalf("stored spec = %+v, want %+v", got.Spec, spec)
		}
		// Weight at the lower bound, through an update.
		got.Spec.Weight = calderav1alpha1.MinQueueWeight
		if _, err := queues.Update(t.Context(), got, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("updating weight to %d: %v", calderav1alpha1.MinQueueWeight, err)
		}
	})

	t.Run("integer quantities are compared with string ones", func(t *testing.T) {
		// kubectl sends `cpu: 4` as a JSON number; the typed client always
		// sends strings.
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": calderav1alpha1.SchemeGroupVersion.String(),
			"kind":       "Queue",
			"metadata":   map[string]any{"name": "integers"},
			"spec": map[string]any{
				"capability": map[string]any{"cpu": 4, "pods": "10", "memory": "1Gi"},
				"guarantee":  map[string]any{"cpu": "4000m", "pods": 10, "memory": 1073741824},
			},
		}}
		if _, err := dyn.Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating a Queue with integer quantities: %v", err)
		}
		t.Cleanup(func() { _ = dyn.Delete(context.Background(), "integers", metav1.DeleteOptions{}) })
		// The typed client reads them back as quantities.
		q, err := queues.Get(t.Context(), "integers", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := q.Spec.Capability[corev1.ResourceCPU]; got.Cmp(resource.MustParse("4")) != 0 {
			t.Fatalf("capability cpu = %s, want 4", got.String())
		}
	})

	t.Run("invalid specs are rejected with a message naming the problem", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			spec map[string]any
			// field is the path the apiserver blames; want are substrings of
			// the error message.
			field string
			want  []string
		}{
			{
				name:  "weight-zero",
				spec:  map[string]any{"weight": 0},
				field: "spec.weight",
				want:  []string{"spec.weight", "greater than or equal to 1"},
			},
			{
				name:  "weight-too-big",
				spec:  map[string]any{"weight": 70000},
				field: "spec.weight",
				want:  []string{"spec.weight", "less than or equal to 65535"},
			},
			{
				name:  "negative-capability",
				spec:  map[string]any{"capability": map[string]any{"cpu": "4", "memory": "-1Gi"}},
				field: "spec.capability",
				want:  []string{"spec.capability must not contain negative quantities: memory is negative"},
			},
			{
				name:  "negative-capability-integer",
				spec:  map[string]any{"capability": map[string]any{"pods": -3}},
				field: "spec.capability",
				want:  []string{"spec.capability must not contain negative quantities: pods is negative"},
			},
			{
				name:  "negative-guarantee",
				spec:  map[string]any{"guarantee": map[string]any{"cpu": "-500m"}},
				field: "spec.guarantee",
				want:  []string{"spec.guarantee must not contain negative quantities: cpu is negative"},
			},
			{
				name: "guarantee-above-capability",
				spec: map[string]any{
					"capability": map[string]any{"cpu": "2", "memory": "4Gi"},
					"guarantee":  map[string]any{"cpu": "2001m", "memory": "4Gi"},
				},
				field: "spec.guarantee",
				want:  []string{"spec.guarantee must not exceed spec.capability: the guarantee of cpu is above its capability"},
			},
			{
				name: "guarantee-above-capability-integers",
				spec: map[string]any{
					"capability": map[string]any{"nvidia.com/gpu": "2500m"},
					"guarantee":  map[string]any{"nvidia.com/gpu": 3},
				},
				field: "spec.guarantee",
				want:  []string{"the guarantee of nvidia.com/gpu is above its capability"},
			},
			{
				name:  "too-many-guaranteed-resources",
				spec:  map[string]any{"guarantee": manyResources(13)},
				field: "spec.guarantee",
				want:  []string{"spec.guarantee", "must have at most 12 items"},
			},
			{
				name: "not-a-quantity",
				spec: map[string]any{
					"capability": map[string]any{"cpu": "2"},
					"guarantee":  map[string]any{"cpu": "lots"},
				},
				field: "spec.guarantee.cpu",
				want:  []string{"spec.guarantee.cpu", "should match"},
			},
			{
				name:  "self-parent",
				spec:  map[string]any{"parent": "self-parent"},
				field: "spec.parent",
				want:  []string{"a queue cannot be its own parent"},
			},
			{
				name:  "bad-state",
				spec:  map[string]any{"state": "Paused"},
				field: "spec.state",
				want:  []string{"spec.state", `supported values: "Open", "Closed"`},
			},
			{
				name:  "bad-parent-name",
				spec:  map[string]any{"parent": "Not_A_Name"},
				field: "spec.parent",
				want:  []string{"spec.parent", "should match"},
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				obj := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": calderav1alpha1.SchemeGroupVersion.String(),
					"kind":       "Queue",
					"metadata":   map[string]any{"name": tc.name},
					"spec":       tc.spec,
				}}
				_, err := dyn.Create(t.Context(), obj, metav1.CreateOptions{})
				if err == nil {
					_ = dyn.Delete(t.Context(), tc.name, metav1.DeleteOptions{})
					t.Fatalf("Queue with spec %v was accepted", tc.spec)
				}
				assertInvalid(t, err, tc.field, tc.want...)
				if _, err := queues.Get(t.Context(), tc.name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Fatalf("rejected Queue %s exists (get error %v)", tc.name, err)
				}
			})
		}
	})

	t.Run("updates are validated too", func(t *testing.T) {
		q := create(t, &calderav1alpha1.Queue{
			ObjectMeta: metav1.ObjectMeta{Name: "update-me"},
			Spec: calderav1alpha1.QueueSpec{
				Capability: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
				Guarantee:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			},
		})
		bad := q.DeepCopy()
		bad.Spec.Guarantee[corev1.ResourceCPU] = resource.MustParse("5")
		_, err := queues.Update(t.Context(), bad, metav1.UpdateOptions{})
		assertInvalid(t, err, "spec.guarantee", "spec.guarantee must not exceed spec.capability: the guarantee of cpu is above its capability")

		bad = q.DeepCopy()
		bad.Spec.Parent = q.Name
		_, err = queues.Update(t.Context(), bad, metav1.UpdateOptions{})
		assertInvalid(t, err, "spec.parent", "a queue cannot be its own parent")

		// Lowering capability below the guarantee is caught as well.
		bad = q.DeepCopy()
		bad.Spec.Capability[corev1.ResourceCPU] = resource.MustParse("500m")
		_, err = queues.Update(t.Context(), bad, metav1.UpdateOptions{})
		assertInvalid(t, err, "spec.guarantee", "the guarantee of cpu is above its capability")
	})

	t.Run("status is a subresource", func(t *testing.T) {
		q := create(t, &calderav1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "with-status"}})
		q.Status = calderav1alpha1.QueueStatus{
			Allocated: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")},
			Deserved:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			Share:     "0.75",
			Pending:   1, Admitted: 2, Running: 3, Completed: 4,
			Conditions: []metav1.Condition{{
				Type: calderav1alpha1.QueueConditionOverDeserved, Status: metav1.ConditionFalse,
				Reason: calderav1alpha1.ReasonWithinDeserved, Message: "allocated is within deserved",
				LastTransitionTime: metav1.Now(),
			}},
		}
		updated, err := queues.UpdateStatus(t.Context(), q, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("UpdateStatus: %v", err)
		}
		if updated.Status.Share != "0.75" || updated.Status.Running != 3 || len(updated.Status.Conditions) != 1 {
			t.Fatalf("status after UpdateStatus = %+v", updated.Status)
		}

		// A server-side apply of one condition (as a status reconciler would
		// do) merges by type.
		applied, err := queues.ApplyStatus(t.Context(),
			applyv1alpha1.Queue(q.Name).WithStatus(applyv1alpha1.QueueStatus().WithConditions(
				metav1ac.Condition().
					WithType(calderav1alpha1.QueueConditionInvalidParent).
					WithStatus(metav1.ConditionTrue).
					WithReason(calderav1alpha1.ReasonParentNotFound).
					WithMessage(`parent queue "missing" does not exist`).
					WithLastTransitionTime(metav1.Now()))),
			metav1.ApplyOptions{FieldManager: "queueapi-test", Force: true})
		if err != nil {
			t.Fatalf("ApplyStatus: %v", err)
		}
		if c := meta.FindStatusCondition(applied.Status.Conditions, calderav1alpha1.QueueConditionInvalidParent); c == nil || c.Status != metav1.ConditionTrue {
			t.Fatalf("InvalidParent condition not applied: %+v", applied.Status.Conditions)
		}
		if meta.FindStatusCondition(applied.Status.Conditions, calderav1alpha1.QueueConditionOverDeserved) == nil {
			t.Fatalf("applying InvalidParent dropped OverDeserved: %+v", applied.Status.Conditions)
		}

		// Writes to the main resource do not touch status.
		applied.Spec.Weight = 7
		applied.Status.Share = "9.99"
		afterSpec, err := queues.Update(t.Context(), applied, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
		if afterSpec.Spec.Weight != 7 || afterSpec.Status.Share != "0.75" {
			t.Fatalf("after a spec update: weight %d (want 7), share %q (want 0.75: status ignored)", afterSpec.Spec.Weight, afterSpec.Status.Share)
		}
	})

	t.Run("kubectl get columns and short name", func(t *testing.T) {
		crd, err := env.APIExt.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), crdName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("getting CRD: %v", err)
		}
		if crd.Spec.Scope != apiextensionsv1.ClusterScoped {
			t.Errorf("scope = %s, want Cluster", crd.Spec.Scope)
		}
		if !reflect.DeepEqual(crd.Spec.Names.ShortNames, []string{"calq"}) {
			t.Errorf("short names = %v, want [calq]", crd.Spec.Names.ShortNames)
		}
		if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1alpha1" {
			t.Fatalf("versions = %+v, want only v1alpha1", crd.Spec.Versions)
		}
		version := crd.Spec.Versions[0]
		if version.Subresources == nil || version.Subresources.Status == nil {
			t.Errorf("status subresource not enabled")
		}
		wantColumns := []struct{ name, path, typ string }{
			{"Weight", ".spec.weight", "integer"},
			{"State", ".spec.state", "string"},
			{"Parent", ".spec.parent", "string"},
			{"Share", ".status.share", "string"},
			{"Pending", ".status.pending", "integer"},
			{"Admitted", ".status.admitted", "integer"},
			{"Running", ".status.running", "integer"},
			{"Age", ".metadata.creationTimestamp", "date"},
		}
		cols := version.AdditionalPrinterColumns
		if len(cols) != len(wantColumns) {
			t.Fatalf("printer columns = %+v, want %d", cols, len(wantColumns))
		}
		for i, w := range wantColumns {
			if c := cols[i]; c.Name != w.name || c.JSONPath != w.path || c.Type != w.typ {
				t.Errorf("printer column %d = %s %s %s, want %s %s %s", i, c.Name, c.JSONPath, c.Type, w.name, w.path, w.typ)
			}
		}

		// The apiserver serves them as kubectl asks for them: a Table.
		q := create(t, &calderav1alpha1.Queue{
			ObjectMeta: metav1.ObjectMeta{Name: "table-row"},
			Spec:       calderav1alpha1.QueueSpec{Weight: 3},
		})
		q.Status.Share = "0.42"
		q.Status.Pending = 5
		if _, err := queues.UpdateStatus(t.Context(), q, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("UpdateStatus: %v", err)
		}
		raw, err := env.Client.CoreV1().RESTClient().Get().
			AbsPath("/apis", calderav1alpha1.GroupName, "v1alpha1", "queues", q.Name).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
			DoRaw(t.Context())
		if err != nil {
			t.Fatalf("getting the Queue as a Table: %v", err)
		}
		var table metav1.Table
		if err := json.Unmarshal(raw, &table); err != nil {
			t.Fatalf("decoding Table: %v", err)
		}
		var names []string
		for _, c := range table.ColumnDefinitions {
			names = append(names, c.Name)
		}
		if want := []string{"Name", "Weight", "State", "Parent", "Share", "Pending", "Admitted", "Running", "Age"}; !reflect.DeepEqual(names, want) {
			t.Fatalf("Table columns = %v, want %v", names, want)
		}
		if len(table.Rows) != 1 {
			t.Fatalf("Table rows = %d, want 1", len(table.Rows))
		}
		cells := table.Rows[0].Cells
		// JSON numbers decode as float64; an absent field is nil.
		want := []any{"table-row", float64(3), "Open", nil, "0.42", float64(5), float64(0), float64(0)}
		if !reflect.DeepEqual(cells[:len(want)], want) {
			t.Fatalf("Table row = %v, want %v followed by the age", cells, want)
		}
	})
}

// assertInvalid fails unless err is a 422 Invalid whose causes blame field and
// whose message contains every want.
func assertInvalid(t *testing.T, err error, field string, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want an Invalid error on %s", field)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("error = %v (reason %s), want Invalid", err, apierrors.ReasonForError(err))
	}
	msg := err.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not contain %q", msg, w)
		}
	}
	var fields []string
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			fields = append(fields, c.Field)
			if c.Field == field {
				t.Logf("rejected: %s", msg)
				return
			}
		}
	}
	t.Errorf("error causes blame %v, want %s (error: %s)", fields, field, msg)
}

// manyResources returns n distinct extended resources of quantity 1.
func manyResources(n int) map[string]any {
	out := map[string]any{}
	for i := range n {
		out[fmt.Sprintf("example.com/r%d", i)] = "1"
	}
	return out
}

// equalSpec compares specs semantically (quantities by value).
func equalSpec(a, b calderav1alpha1.QueueSpec) bool {
	return equalResources(a.Capability, b.Capability) && equalResources(a.Guarantee, b.Guarantee) &&
		a.Weight == b.Weight && ptr.Deref(a.Reclaimable, true) == ptr.Deref(b.Reclaimable, true) &&
		a.Parent == b.Parent && a.Priority == b.Priority && a.State == b.State
}

func equalResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, qa := range a {
		qb, ok := b[name]
		if !ok || qa.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}
