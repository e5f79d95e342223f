package sole_test

import (
	"os"
	"path/filepath"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

// kubeSchedulerUser is the user kubeadm's scheduler.conf authenticates as.
const kubeSchedulerUser = "system:kube-scheduler"

// TestKubeadmUnderRBAC runs manifests/kubeadm's configuration as kubeadm's
// scheduler identity, the user system:kube-scheduler (a token stands in for
// scheduler.conf's client certificate), on an apiserver that authorizes with
// RBAC, granted only the bootstrap roles every cluster has, Caldera's
// ClusterRole and manifests/kubeadm/rbac.yaml. It must take the usual Lease,
// create the default queue, bind a default pod and a gang, and write the
// gang's status.
func TestKubeadmUnderRBAC(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	const token = "kubeadm-scheduler-token"
	if err := os.WriteFile(tokens, []byte(token+","+kubeSchedulerUser+",kube-scheduler-uid\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := harness.StartWith(t, harness.WithAPIServerFlags("--authorization-mode=RBAC", "--token-auth-file="+tokens))

	// Caldera's ClusterRole (not its ServiceAccount's bindings or Lease
	// Role) and the kubeadm binding.
	for _, o := range harness.DecodeYAMLFile(t, filepath.Join(env.RepoRoot, "manifests", "rbac", "caldera-scheduler.yaml")) {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		cr := &rbacv1.ClusterRole{}
		fromUnstructured(t, o, cr)
		if _, err := env.Client.RbacV1().ClusterRoles().Create(t.Context(), cr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	objs := harness.DecodeYAMLFile(t, filepath.Join(env.RepoRoot, "manifests", "kubeadm", "rbac.yaml"))
	if len(objs) != 1 || objs[0].GetKind() != "ClusterRoleBinding" {
		t.Fatalf("manifests/kubeadm/rbac.yaml: want one ClusterRoleBinding, found %d objects", len(objs))
	}
	crb := &rbacv1.ClusterRoleBinding{}
	fromUnstructured(t, objs[0], crb)
	if _, err := env.Client.RbacV1().ClusterRoleBindings().Create(t.Context(), crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	kubeconfig := env.TokenKubeconfig(t, token)
	checkUser(t, kubeconfig)
	env.AddNodes(t, 2, "4", "8Gi")

	// WithLeaderElection keeps the file's Lease (and its timing): the
	// harness turns leader election off unless told.
	sched := env.StartScheduler(t,
		harness.WithConfigFile(filepath.Join(env.RepoRoot, "manifests", "kubeadm", "caldera-scheduler.yaml")),
		harness.WithKubeconfig(kubeconfig),
		harness.WithLeaderElection("kube-scheduler"))
	sched.WaitLeading(t, timeout)

	ns := env.Namespace(t)
	env.CreatePods(t, defaultPod(ns, "web", "1"))
	env.CreatePodGroup(t, harness.PodGroup(ns, "gang", 3))
	env.CreatePods(t, harness.Members(ns, "gang", 3, "1")...)
	env.WaitBound(t, ns, timeout, "web", "gang-0", "gang-1", "gang-2")
	for _, m := range []string{"gang-0", "gang-1", "gang-2"} {
		env.SetPodPhase(t, ns, m, v1.PodRunning)
	}
	env.WaitPodGroupPhase(t, ns, "gang", v1alpha1.PodGroupRunning, timeout)
	harness.WaitFor(t, timeout, func() (bool, error) {
		_, err := env.QueueClient().SchedulingV1alpha1().Queues().Get(t.Context(), "default", metav1.GetOptions{})
		return err == nil, nil
	}, "the default queue to be created by the scheduler")
}

// checkUser fails unless kubeconfig authenticates as system:kube-scheduler.
func checkUser(t *testing.T, kubeconfig string) {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	review, err := c.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview: %v", err)
	}
	if got := review.Status.UserInfo.Username; got != kubeSchedulerUser {
		t.Fatalf("the token authenticates as %q, want %q", got, kubeSchedulerUser)
	}
}

// fromUnstructured converts o into the typed obj, strictly.
func fromUnstructured(t *testing.T, o *unstructured.Unstructured, obj any) {
	t.Helper()
	data, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
}
