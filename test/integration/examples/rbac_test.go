package examples_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	rbacregistry "k8s.io/kubernetes/pkg/registry/rbac/validation"
	rbacauthz "k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"
)

// recorder is a reverse proxy in front of the test apiserver that remembers
// every request made through it, as the authorizer would see it.
type recorder struct {
	mu    sync.Mutex
	attrs map[string]authorizer.AttributesRecord
}

// startRecorder serves a proxy to cfg's apiserver and returns a kubeconfig
// (no credentials: the proxy adds cfg's) for clients to go through it.
func startRecorder(t *testing.T, cfg *rest.Config) (*recorder, string) {
	t.Helper()
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{attrs: map[string]authorizer.AttributesRecord{}}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = rt
	proxy.FlushInterval = -1 // watches stream
	infos := &request.RequestInfoFactory{
		APIPrefixes:          sets.NewString("api", "apis"),
		GrouplessAPIPrefixes: sets.NewString("api"),
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if info, err := infos.NewRequestInfo(r); err == nil {
			rec.add(info)
		}
		proxy.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: "http://" + l.Addr().String()}
	kc.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	kc.CurrentContext = "proxy"
	path := filepath.Join(t.TempDir(), "kubeconfig-proxy")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return rec, path
}

func (r *recorder) add(info *request.RequestInfo) {
	a := authorizer.AttributesRecord{
		Verb:            info.Verb,
		Namespace:       info.Namespace,
		APIGroup:        info.APIGroup,
		APIVersion:      info.APIVersion,
		Resource:        info.Resource,
		Subresource:     info.Subresource,
		Name:            info.Name,
		ResourceRequest: info.IsResourceRequest,
		Path:            info.Path,
	}
	if !a.ResourceRequest {
		// Discovery paths: what matters is the verb on the path prefix.
		a.Namespace, a.APIGroup, a.APIVersion, a.Resource, a.Subresource, a.Name = "", "", "", "", "", ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attrs[describe(a)] = a
}

func (r *recorder) requests() []authorizer.AttributesRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.attrs))
	for k := range r.attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]authorizer.AttributesRecord, 0, len(keys))
	for _, k := range keys {
		out = append(out, r.attrs[k])
	}
	return out
}

func describe(a authorizer.AttributesRecord) string {
	if !a.ResourceRequest {
		return fmt.Sprintf("%s %s", a.Verb, a.Path)
	}
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	if a.APIGroup != "" {
		res += "." + a.APIGroup
	}
	return fmt.Sprintf("%s %s ns=%q name=%q", a.Verb, res, a.Namespace, a.Name)
}

// rbacAuthorizer evaluates the RBAC objects among objs together with the
// cluster's bootstrap roles and bindings, as a real cluster would.
func rbacAuthorizer(t *testing.T, objs []*unstructured.Unstructured) *rbacauthz.RBACAuthorizer {
	t.Helper()
	var (
		roles        []*rbacv1.Role
		bindings     []*rbacv1.RoleBinding
		clusterRoles []*rbacv1.ClusterRole
		crBindings   []*rbacv1.ClusterRoleBinding
	)
	conv := func(u *unstructured.Unstructured, into any) {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	for _, u := range objs {
		switch u.GetKind() {
		case "Role":
			r := &rbacv1.Role{}
			conv(u, r)
			roles = append(roles, r)
		case "RoleBinding":
			b := &rbacv1.RoleBinding{}
			conv(u, b)
			bindings = append(bindings, b)
		case "ClusterRole":
			r := &rbacv1.ClusterRole{}
			conv(u, r)
			clusterRoles = append(clusterRoles, r)
		case "ClusterRoleBinding":
			b := &rbacv1.ClusterRoleBinding{}
			conv(u, b)
			crBindings = append(crBindings, b)
		}
	}
	// Caldera's own rules: no wildcards.
	for _, r := range clusterRoles {
		checkNoWildcards(t, "ClusterRole "+r.Name, r.Rules)
	}
	for _, r := range roles {
		checkNoWildcards(t, "Role "+r.Namespace+"/"+r.Name, r.Rules)
	}
	for _, r := range bootstrappolicy.ClusterRoles() {
		clusterRoles = append(clusterRoles, r.DeepCopy())
	}
	for _, b := range bootstrappolicy.ClusterRoleBindings() {
		crBindings = append(crBindings, b.DeepCopy())
	}
	for ns, rs := range bootstrappolicy.NamespaceRoles() {
		for _, r := range rs {
			r := r.DeepCopy()
			r.Namespace = ns
			roles = append(roles, r)
		}
	}
	for ns, bs := range bootstrappolicy.NamespaceRoleBindings() {
		for _, b := range bs {
			b := b.DeepCopy()
			b.Namespace = ns
			bindings = append(bindings, b)
		}
	}
	_, static := rbacregistry.NewTestRuleResolver(roles, bindings, clusterRoles, crBindings)
	return rbacauthz.New(static, static, static, static)
}

func checkNoWildcards(t *testing.T, what string, rules []rbacv1.PolicyRule) {
	t.Helper()
	for _, r := range rules {
		for _, list := range [][]string{r.Verbs, r.Resources, r.APIGroups} {
			for _, v := range list {
				if strings.Contains(v, "*") {
					t.Errorf("%s has a wildcard rule: %+v", what, r)
				}
			}
		}
	}
}

// schedulerUser is the scheduler's identity in a cluster.
func schedulerUser(namespace string) user.Info {
	u := serviceaccount.UserInfo(namespace, "caldera-scheduler", "")
	return &user.DefaultInfo{Name: u.GetName(), Groups: append(u.GetGroups(), user.AllAuthenticated)}
}

// checkRBAC fails for every recorded request the RBAC in objs does not allow
// the scheduler's service account, and for a few it must not allow.
func checkRBAC(t *testing.T, rec *recorder, objs []*unstructured.Unstructured) {
	t.Helper()
	authz := rbacAuthorizer(t, objs)
	who := schedulerUser("caldera-system")
	allowed := func(a authorizer.AttributesRecord) bool {
		a.User = who
		d, _, err := authz.Authorize(context.Background(), a)
		return err == nil && d == authorizer.DecisionAllow
	}
	reqs := rec.requests()
	if len(reqs) == 0 {
		t.Fatal("no requests recorded")
	}
	createdPodGroup := false
	for _, a := range reqs {
		if !allowed(a) {
			t.Errorf("the scheduler's service account may not: %s", describe(a))
		}
		createdPodGroup = createdPodGroup || (a.Verb == "create" && a.Resource == "podgroups" && a.Subresource == "")
	}
	// The examples' gangs by annotation make the scheduler create
	// PodGroups, so the check above covered that verb.
	if !createdPodGroup {
		t.Error("no PodGroup create was recorded: the examples' gangs by annotation were not exercised through the proxy")
	}
	// Least privilege: what Caldera never does stays denied.
	for _, a := range []authorizer.AttributesRecord{
		{Verb: "delete", APIGroup: "scheduling.x-k8s.io", Resource: "podgroups", Namespace: "ns", Name: "pg", ResourceRequest: true},
		{Verb: "delete", APIGroup: "scheduling.caldera.dev", Resource: "queues", Name: "team-a", ResourceRequest: true},
		{Verb: "update", APIGroup: "scheduling.caldera.dev", Resource: "queues", Name: "team-a", ResourceRequest: true},
		{Verb: "update", APIGroup: "coordination.k8s.io", Resource: "leases", Namespace: "kube-system", Name: "kube-controller-manager", ResourceRequest: true},
		{Verb: "update", APIGroup: "coordination.k8s.io", Resource: "leases", Namespace: "default", Name: "caldera-scheduler", ResourceRequest: true},
		{Verb: "get", Resource: "secrets", Namespace: "kube-system", Name: "any", ResourceRequest: true},
		{Verb: "create", Resource: "resourcequotas", Namespace: "ns", ResourceRequest: true},
	} {
		if allowed(a) {
			t.Errorf("the scheduler's service account may, but should not: %s", describe(a))
		}
	}
	checkGrantsUsed(t, reqs, objs)
	lines := make([]string, 0, len(reqs))
	for _, a := range reqs {
		lines = append(lines, "  "+describe(a))
	}
	t.Logf("%d distinct requests of the scheduler are allowed:\n%s", len(reqs), strings.Join(lines, "\n"))
}

// rarelyUsed are grants of Caldera's own roles that a run of the examples
// does not exercise, each with the code path that needs it.
var rarelyUsed = map[string]string{
	"get podgroups.scheduling.x-k8s.io": "the status writer re-reads a PodGroup after a write conflict (retry.RetryOnConflict)",
	// client-go's informers list through a watch (sendInitialEvents)
	// when the apiserver serves it, as the test's does, and fall back to
	// LIST when it does not.
	"list podgroups.scheduling.x-k8s.io": "informers fall back to LIST without watch-list",
	"list queues.scheduling.caldera.dev": "informers fall back to LIST without watch-list",
	"list resourcequotas.":               "informers fall back to LIST without watch-list",
	"list jobs.batch":                    "informers fall back to LIST without watch-list",
	// The events library patches an Event that repeats within its series
	// window; whether one repeats in this short run depends on timing.
	"patch events.events.k8s.io": "a repeated Event becomes a series, which is patched",
	// Upstream's PodGroups are served only where the cluster turns the
	// GenericWorkload gate on (beta, off by default in 1.37), which this
	// run's apiserver does not; test/integration/upstreamgangs runs with it
	// on.
	"get podgroups.scheduling.k8s.io":           "upstream PodGroups (GenericWorkload on): re-read after a status write conflict",
	"list podgroups.scheduling.k8s.io":          "upstream PodGroups (GenericWorkload on): the informer's list",
	"watch podgroups.scheduling.k8s.io":         "upstream PodGroups (GenericWorkload on): the informer's watch",
	"patch podgroups.scheduling.k8s.io":         "upstream PodGroups (GenericWorkload on): the admitted-at annotation",
	"update podgroups/status.scheduling.k8s.io": "upstream PodGroups (GenericWorkload on): Caldera's conditions",
}

// checkGrantsUsed fails for every verb a rule of Caldera's own Roles and
// ClusterRoles (those labelled part-of=caldera; the bootstrap roles it is
// bound to are upstream's) grants that no recorded request used: least
// privilege, kept by the test rather than by review.
func checkGrantsUsed(t *testing.T, reqs []authorizer.AttributesRecord, objs []*unstructured.Unstructured) {
	t.Helper()
	used := map[string]bool{}
	for _, a := range reqs {
		if !a.ResourceRequest {
			continue
		}
		res := a.Resource
		if a.Subresource != "" {
			res += "/" + a.Subresource
		}
		used[a.Verb+" "+res+"."+a.APIGroup] = true
		used[a.Verb+" "+res+"."+a.APIGroup+" name="+a.Name] = true
	}
	for _, u := range objs {
		if (u.GetKind() != "Role" && u.GetKind() != "ClusterRole") || u.GetLabels()["app.kubernetes.io/part-of"] != "caldera" {
			continue
		}
		var role rbacv1.ClusterRole // a Role's rules have the same shape
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &role); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
		for _, rule := range role.Rules {
			for _, g := range rule.APIGroups {
				for _, r := range rule.Resources {
					for _, v := range rule.Verbs {
						grant := v + " " + r + "." + g
						ok := used[grant]
						for _, n := range rule.ResourceNames {
							ok = ok || used[grant+" name="+n]
						}
						if !ok && rarelyUsed[grant] == "" {
							t.Errorf("%s %s grants %q, which no request of the run used: drop it (or, for a rare path, list it in rarelyUsed with the path)", u.GetKind(), u.GetName(), grant)
						}
					}
				}
			}
		}
	}
}
