// Package routing_test checks manifests/components/route-to-caldera: the
// MutatingAdmissionPolicy that sends pods of chosen namespaces to Caldera
// where it runs beside another kube-scheduler.
package routing_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

const (
	// routeLabel is the namespace label the binding selects.
	routeLabel = "scheduling.caldera.dev/scheduler"
	calderaSch = "caldera-scheduler"
	// policyLoad bounds how long the apiserver takes to start enforcing a
	// new policy (it reads policies through an informer).
	policyLoad = 30 * time.Second
)

func TestRouteToCaldera(t *testing.T) {
	env := harness.Start(t)
	ctx := t.Context()
	createPolicy(t, env)

	routed := env.Namespace(t)
	label(t, env, routed)
	other := env.Namespace(t)

	// The apiserver enforces the binding once its informer has it: probe
	// until a pod is routed.
	seq := 0
	harness.WaitFor(t, policyLoad, func() (bool, error) {
		seq++
		p, err := env.Client.CoreV1().Pods(routed).Create(ctx, harness.Pod(routed, fmt.Sprintf("probe-%d", seq)).Scheduler("").Obj(), metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return p.Spec.SchedulerName == calderaSch, nil
	}, "the policy to route a pod of a labelled namespace")

	for _, tc := range []struct {
		name, ns, asked, want string
	}{
		{"no scheduler named, labelled namespace", routed, "", calderaSch},
		{"default-scheduler named, labelled namespace", routed, v1.DefaultSchedulerName, calderaSch},
		{"another scheduler named, labelled namespace", routed, "batch-other", "batch-other"},
		{"no scheduler named, other namespace", other, "", v1.DefaultSchedulerName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seq++
			p, err := env.Client.CoreV1().Pods(tc.ns).Create(ctx, harness.Pod(tc.ns, fmt.Sprintf("p-%d", seq)).Scheduler(tc.asked).Obj(), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Spec.SchedulerName != tc.want {
				t.Errorf("schedulerName %q, want %q", p.Spec.SchedulerName, tc.want)
			}
		})
	}

	// A routed pod is Caldera's: the real scheduler with the shipped
	// configuration binds it.
	env.AddNodes(t, 1, "4", "8Gi")
	env.StartScheduler(t)
	p := harness.Pod(routed, "routed-job").Scheduler("").CPU("1").Labels(map[string]string{"app": "routed"}).Obj()
	if _, err := env.Client.CoreV1().Pods(routed).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitBoundCount(t, routed, "app=routed", 1, policyLoad)
}

// createPolicy creates the component's policy and binding, as kubectl
// apply -k would from policy.yaml.
func createPolicy(t *testing.T, env *harness.Env) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.RepoRoot, "manifests", "components", "route-to-caldera", "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(data, []byte("\n---\n"))
	if len(docs) != 2 {
		t.Fatalf("policy.yaml holds %d documents, want the policy and its binding", len(docs))
	}
	var policy admissionv1.MutatingAdmissionPolicy
	if err := yaml.UnmarshalStrict(docs[0], &policy); err != nil {
		t.Fatalf("the policy: %v", err)
	}
	var binding admissionv1.MutatingAdmissionPolicyBinding
	if err := yaml.UnmarshalStrict(docs[1], &binding); err != nil {
		t.Fatalf("the binding: %v", err)
	}
	api := env.Client.AdmissionregistrationV1()
	if _, err := api.MutatingAdmissionPolicies().Create(t.Context(), &policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the policy: %v", err)
	}
	if _, err := api.MutatingAdmissionPolicyBindings().Create(t.Context(), &binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the binding: %v", err)
	}
}

func label(t *testing.T, env *harness.Env, ns string) {
	t.Helper()
	o, err := env.Client.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if o.Labels == nil {
		o.Labels = map[string]string{}
	}
	o.Labels[routeLabel] = "caldera"
	if _, err := env.Client.CoreV1().Namespaces().Update(t.Context(), o, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
