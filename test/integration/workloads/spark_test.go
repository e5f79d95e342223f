package workloads_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/status"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// sparkExample is examples/spark-gang.yaml, decoded, with the Queues of
// examples/queues.yaml it names.
type sparkExample struct {
	queues    []*qapi.Queue
	pg        *v1alpha1.PodGroup
	driver    *v1.Pod
	executors []*v1.Pod
}

func readSparkExample(t *testing.T, root string) sparkExample {
	t.Helper()
	var ex sparkExample
	for _, f := range []string{"queues.yaml", "spark-gang.yaml"} {
		data, err := os.ReadFile(filepath.Join(root, "examples", f))
		if err != nil {
			t.Fatal(err)
		}
		d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var obj map[string]any
			if err := d.Decode(&obj); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			into := func(v any) {
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, v); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
			}
			switch obj["kind"] {
			case "Queue":
				q := &qapi.Queue{}
				into(q)
				ex.queues = append(ex.queues, q)
			case "PodGroup":
				ex.pg = &v1alpha1.PodGroup{}
				into(ex.pg)
			case "Pod":
				p := &v1.Pod{}
				into(p)
				if p.Labels["spark-role"] == "driver" {
					ex.driver = p
				} else {
					ex.executors = append(ex.executors, p)
				}
			}
		}
	}
	if ex.pg == nil || ex.driver == nil || len(ex.executors) == 0 {
		t.Fatal("examples/spark-gang.yaml has no PodGroup, driver or executors")
	}
	return ex
}

// TestSparkDriverCreatesExecutors: the Spark example as spark-submit runs
// it. Only the driver exists at first, and it creates its executors once
// it runs. With the example's minMember 1 (and minResources for the
// driver and 2 executors) the driver binds and its executors follow;
// with minMember 3 the driver is held waiting for members that only it
// would create, which is why the example says 1.
func TestSparkDriverCreatesExecutors(t *testing.T) {
	env := harness.StartWith(t)
	env.AddNodes(t, 3, "4", "16Gi")
	env.StartScheduler(t)
	ctx := t.Context()
	ex := readSparkExample(t, env.RepoRoot)
	for _, q := range ex.queues {
		if _, err := env.QueueClient().SchedulingV1alpha1().Queues().Create(ctx, q, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}

	create := func(ns string, objs ...runtime.Object) {
		t.Helper()
		for _, o := range objs {
			var err error
			switch o := o.(type) {
			case *v1alpha1.PodGroup:
				_, err = env.PGClient.SchedulingV1alpha1().PodGroups(ns).Create(ctx, o, metav1.CreateOptions{})
			case *v1.Pod:
				_, err = env.Client.CoreV1().Pods(ns).Create(ctx, o, metav1.CreateOptions{})
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if ex.pg.Spec.MinMember != 1 {
		t.Fatalf("examples/spark-gang.yaml says minMember %d: the driver would wait for executors only it creates", ex.pg.Spec.MinMember)
	}

	ns := env.Namespace(t)
	create(ns, ex.pg.DeepCopy(), ex.driver.DeepCopy())
	env.WaitBound(t, ns, timeout, ex.driver.Name)
	env.SetPodPhase(t, ns, ex.driver.Name, v1.PodRunning)
	var names []string
	for _, e := range ex.executors {
		create(ns, e.DeepCopy())
		names = append(names, e.Name)
	}
	env.WaitBound(t, ns, timeout, names...)

	// minMember 3: the driver alone is held, told it waits for members.
	held := env.Namespace(t)
	pg := ex.pg.DeepCopy()
	pg.Spec.MinMember = 3
	create(held, pg, ex.driver.DeepCopy())
	harness.WaitFor(t, timeout, func() (bool, error) {
		p, err := env.Client.CoreV1().Pods(held).Get(ctx, ex.driver.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Reason == status.ReasonWaitingForMembers {
				return true, nil
			}
		}
		return false, nil
	}, "the driver of a minMember 3 gang to wait for members")
	env.ConsistentlyUnbound(t, held, time.Second, ex.driver.Name)
}
