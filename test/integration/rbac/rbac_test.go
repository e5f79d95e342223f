// Package rbac_test runs the real scheduler under the RBAC that manifests/rbac
// ships: a kube-apiserver with --authorization-mode=RBAC, the manifests' RBAC
// objects applied, and the scheduler authenticating with a token of the
// caldera-system/caldera-scheduler ServiceAccount (TokenRequest API). A gang
// must bind fully, its PodGroup status must be written and its admission
// announced; with one rule removed, the matching write must visibly fail.
package rbac_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

const (
	timeout = 30 * time.Second
	// quiet is how long the PodGroup status must stay unwritten once the
	// status rule is gone (with the rule it is written well within 1s).
	quiet = 4 * time.Second

	saNamespace = "caldera-system"
	saName      = "caldera-scheduler"
)

// kinds maps the kinds of manifests/rbac to their resources.
var kinds = map[string]struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}{
	"Namespace":          {schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, false},
	"ServiceAccount":     {schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, true},
	"ClusterRole":        {rbacv1.SchemeGroupVersion.WithResource("clusterroles"), false},
	"ClusterRoleBinding": {rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"), false},
	"Role":               {rbacv1.SchemeGroupVersion.WithResource("roles"), true},
	"RoleBinding":        {rbacv1.SchemeGroupVersion.WithResource("rolebindings"), true},
}

func TestSchedulerUnderRBAC(t *testing.T) {
	env := harness.StartWith(t, harness.WithAPIServerFlags("--authorization-mode=RBAC"))

	// The admin client still works under RBAC (it is in system:masters), and
	// RBAC is really on: an unbound ServiceAccount is denied.
	applyRBAC(t, env)
	waitAllowed(t, env, true, authorizationv1.ResourceAttributes{Group: "scheduling.x-k8s.io", Resource: "podgroups", Subresource: "status", Verb: "update", Namespace: "any"})
	waitAllowed(t, env, true, authorizationv1.ResourceAttributes{Group: "scheduling.x-k8s.io", Resource: "podgroups", Verb: "create", Namespace: "any"})
	waitAllowed(t, env, true, authorizationv1.ResourceAttributes{Group: "scheduling.caldera.dev", Resource: "queues", Verb: "create"})
	if allowed(t, env, authorizationv1.ResourceAttributes{Resource: "secrets", Verb: "get", Namespace: "kube-system"}) {
		t.Fatalf("the scheduler's ServiceAccount may read secrets in kube-system: is RBAC authorization on?")
	}

	kubeconfig := serviceAccountKubeconfig(t, env)
	env.AddNodes(t, 2, "4", "8Gi")

	t.Run("gang binds with status and admission under the shipped RBAC", func(t *testing.T) {
		sched := env.StartScheduler(t, harness.WithKubeconfig(kubeconfig))
		defer sched.Stop()
		ns := env.Namespace(t)
		env.CreatePodGroup(t, harness.PodGroup(ns, "gang", 3))
		env.CreatePods(t, harness.Members(ns, "gang", 3, "1")...)
		env.WaitBound(t, ns, timeout, "gang-0", "gang-1", "gang-2")
		began := time.Now()
		pg := env.WaitPodGroupPhase(t, ns, "gang", v1alpha1.PodGroupScheduling, timeout)
		t.Logf("PodGroup status written %v after the gang bound: %+v", time.Since(began).Round(time.Millisecond), pg.Status)
		env.WaitEvent(t, ns, "gang", "Admitted", timeout)
	})

	t.Run("without podgroups/status the status is not written", func(t *testing.T) {
		cr, err := env.Client.RbacV1().ClusterRoles().Get(t.Context(), saName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		kept := cr.Rules[:0]
		removed := 0
		for _, r := range cr.Rules {
			// scheduler-plugins' (upstream's scheduling.k8s.io has one too).
			if len(r.Resources) == 1 && r.Resources[0] == "podgroups/status" && slices.Equal(r.APIGroups, []string{"scheduling.x-k8s.io"}) {
				removed++
				continue
			}
			kept = append(kept, r)
		}
		if removed != 1 {
			t.Fatalf("ClusterRole %s has %d podgroups/status rules, want 1: %+v", saName, removed, cr.Rules)
		}
		cr.Rules = kept
		if _, err := env.Client.RbacV1().ClusterRoles().Update(t.Context(), cr, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, verb := range []string{"update", "patch"} {
			waitAllowed(t, env, false, authorizationv1.ResourceAttributes{Group: "scheduling.x-k8s.io", Resource: "podgroups", Subresource: "status", Verb: verb, Namespace: "any"})
		}

		// A scheduler without leader election writes status (the previous
		// subtest saw it do so), so only the missing rule can keep it from
		// writing.
		sched := env.StartScheduler(t, harness.WithKubeconfig(kubeconfig))
		defer sched.Stop()

		ns := env.Namespace(t)
		env.CreatePodGroup(t, harness.PodGroup(ns, "gang", 3))
		env.CreatePods(t, harness.Members(ns, "gang", 3, "1")...)
		env.WaitBound(t, ns, timeout, "gang-0", "gang-1", "gang-2")
		env.WaitEvent(t, ns, "gang", "Admitted", timeout)
		deadline := time.Now().Add(quiet)
		for time.Now().Before(deadline) {
			pg, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Get(t.Context(), "gang", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if pg.Status != (v1alpha1.PodGroupStatus{}) {
				t.Fatalf("PodGroup status was written without the podgroups/status rule: %+v", pg.Status)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// applyRBAC creates every object of manifests/rbac/*.yaml.
func applyRBAC(t *testing.T, env *harness.Env) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(env.RepoRoot, "manifests", "rbac", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no RBAC manifests found: %v", err)
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		objs = append(objs, harness.DecodeYAMLFile(t, f)...)
	}
	order := map[string]int{"Namespace": 0, "ServiceAccount": 1, "ClusterRole": 2, "Role": 2}
	rank := func(k string) int {
		if r, ok := order[k]; ok {
			return r
		}
		return 3
	}
	sort.SliceStable(objs, func(i, j int) bool { return rank(objs[i].GetKind()) < rank(objs[j].GetKind()) })
	for _, o := range objs {
		k, ok := kinds[o.GetKind()]
		if !ok {
			t.Fatalf("unexpected kind %s %s in manifests/rbac", o.GetKind(), o.GetName())
		}
		var err error
		if k.namespaced {
			_, err = env.Dynamic.Resource(k.gvr).Namespace(o.GetNamespace()).Create(t.Context(), o, metav1.CreateOptions{})
		} else {
			_, err = env.Dynamic.Resource(k.gvr).Create(t.Context(), o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatalf("creating %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	t.Logf("applied %d RBAC objects from manifests/rbac", len(objs))
}

// allowed asks the apiserver whether the scheduler's ServiceAccount may do attrs.
func allowed(t *testing.T, env *harness.Env, attrs authorizationv1.ResourceAttributes) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: &attrs,
		User:               "system:serviceaccount:" + saNamespace + ":" + saName,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + saNamespace, "system:authenticated"},
	}}
	res, err := env.Client.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), sar, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SubjectAccessReview: %v", err)
	}
	return res.Status.Allowed
}

// waitAllowed waits until the RBAC authorizer's caches reflect want for attrs.
func waitAllowed(t *testing.T, env *harness.Env, want bool, attrs authorizationv1.ResourceAttributes) {
	t.Helper()
	harness.WaitFor(t, timeout, func() (bool, error) { return allowed(t, env, attrs) == want, nil },
		fmt.Sprintf("RBAC to decide allowed=%v for the scheduler's ServiceAccount: %+v", want, attrs))
}

// serviceAccountKubeconfig mints a token for the scheduler's ServiceAccount
// and writes a kubeconfig that uses it.
func serviceAccountKubeconfig(t *testing.T, env *harness.Env) string {
	t.Helper()
	tr, err := env.Client.CoreV1().ServiceAccounts(saNamespace).CreateToken(t.Context(), saName, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", saNamespace, saName, err)
	}
	path := env.TokenKubeconfig(t, tr.Status.Token)
	// The token authenticates as the ServiceAccount.
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	review, err := c.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview with the ServiceAccount token: %v", err)
	}
	if want := "system:serviceaccount:" + saNamespace + ":" + saName; review.Status.UserInfo.Username != want {
		t.Fatalf("the token authenticates as %q, want %q", review.Status.UserInfo.Username, want)
	}
	return path
}
