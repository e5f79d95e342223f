// Package harness runs Caldera's integration tests against a real, in-process
// control plane: an embedded etcd, a real kube-apiserver and the real
// kube-scheduler started from Caldera's KubeSchedulerConfiguration.
//
// A test package starts ONE environment in a top-level test and runs its
// scenarios as subtests of it:
//
//	func TestGang(t *testing.T) {
//		env := harness.Start(t)
//		env.StartScheduler(t)
//		t.Run("binds a complete gang", func(t *testing.T) {
//			ns := env.Namespace(t)
//			env.AddNodes(t, 2, "4", "8Gi")
//			...
//		})
//	}
//
// Nodes are cluster-scoped and every scenario shares the same scheduler, so
// scenarios must not run in parallel (do not call t.Parallel in them).
//
// StartScheduler runs the scheduler in the test process (app.Setup and
// app.Run, wired as caldera-scheduler's command wires them);
// StartSchedulerProcess runs caldera-scheduler's command itself as a child
// process, for tests that kill it (see RunSchedulerProcess).
//
// There is no kubelet, no controller-manager and no namespace controller:
// pods never leave Pending unless a test sets their phase (SetPodPhase), and
// the harness deletes pods with a zero grace period.
package harness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	kubetesting "k8s.io/kubernetes/test/utils/ktesting"
	pgclientset "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
	"sigs.k8s.io/yaml"
)

// DefaultSchedulerName is the scheduler name of Caldera's profile; pods built
// with Pod use it unless PodBuilder.Scheduler says otherwise.
const DefaultSchedulerName = "caldera-scheduler"

// apiserverFlags are passed to the test kube-apiserver. ServiceAccount needs
// a token controller that does not run here; TaintNodesByCondition would give
// every new Node a not-ready NoSchedule taint that nothing removes.
var apiserverFlags = []string{
	"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
}

// probeNamespace holds the dry-run objects used to check that CRDs are served.
const probeNamespace = metav1.NamespaceDefault

// activeEnvs counts live environments in this process; see Start.
var activeEnvs atomic.Int32

// Env is a running control plane shared by the scenarios of one test package.
type Env struct {
	// Config reaches the test kube-apiserver with full privileges. It speaks
	// JSON, so clientsets of custom resources can be built from it too.
	Config *rest.Config
	// Client is a typed client for core Kubernetes APIs.
	Client kubernetes.Interface
	// PGClient is a typed client for scheduling.x-k8s.io (PodGroup).
	PGClient pgclientset.Interface
	// Dynamic is a dynamic client for any resource, CRDs included.
	Dynamic dynamic.Interface
	// APIExt is a client for CustomResourceDefinitions.
	APIExt apiextclientset.Interface
	// RepoRoot is the directory holding the repository's go.mod.
	RepoRoot string
	// Kubeconfig is a kubeconfig file that points at the test kube-apiserver.
	Kubeconfig string
	// CRDs are the CustomResourceDefinitions installed from manifests/crds.
	CRDs []*apiextensionsv1.CustomResourceDefinition

	priorityClasses sync.Map // name -> struct{}: PriorityClasses known to exist

	mu      sync.Mutex
	running map[*Scheduler]struct{} // schedulers started and not yet stopped

	// The control plane, kept so that the kube-apiserver can be restarted
	// (apiserver.go).
	tctx        kubetesting.TContext // the test that started the Env, as StartTestServer takes it
	etcd        *etcd3testing.EtcdTestServer
	storage     *storagebackend.Config
	flags       []string
	restartable bool
	apiMu       sync.Mutex
	server      *kubeapiservertesting.TestServer // nil while stopped
	front       *Proxy                           // the stable address of a restartable apiserver
	servingCert []byte                           // what a restartable apiserver serves
}

// Start starts etcd and a kube-apiserver in-process, installs every CRD in
// <repo>/manifests/crds/*.yaml and waits until each one can serve creates.
// Everything is torn down in t.Cleanup. Call it once per test package, from a
// top-level test, and run scenarios as subtests: starting a control plane
// costs a few seconds, so only one Env may be live in a process at a time.
func Start(t *testing.T) *Env {
	t.Helper()
	return StartWith(t)
}

// EnvOption changes how StartWith starts the control plane.
type EnvOption func(*envSettings)

type envSettings struct {
	apiserverFlags []string
	qps            float32
	burst          int
	restartable    bool
}

// WithAPIServerFlags passes extra flags to the test kube-apiserver, after the
// harness's own (so a flag given here wins), e.g.
// WithAPIServerFlags("--authorization-mode=RBAC"). Env.Config keeps full
// privileges in every mode: it authenticates as a member of system:masters.
func WithAPIServerFlags(flags ...string) EnvOption {
	return func(s *envSettings) { s.apiserverFlags = append(s.apiserverFlags, flags...) }
}

// WithClientQPS sets the QPS and burst of Env.Config and the clients built
// from it (default 500 and 1000). Benchmarks raise them, as upstream's
// scheduler_perf does (5000), so that creating objects is not throttled by
// the client.
func WithClientQPS(qps float32, burst int) EnvOption {
	return func(s *envSettings) { s.qps, s.burst = qps, burst }
}

// StartWith is Start with options; StartWith(t) is Start(t).
func StartWith(t *testing.T, opts ...EnvOption) *Env {
	t.Helper()
	settings := &envSettings{}
	for _, o := range opts {
		o(settings)
	}
	flags := append(append([]string(nil), apiserverFlags...), settings.apiserverFlags...)
	if n := activeEnvs.Add(1); n != 1 {
		activeEnvs.Add(-1)
		t.Fatalf("harness.Start: another Env is already running in this process; start one Env per test package in a top-level test and run scenarios as its subtests")
	}
	t.Cleanup(func() { activeEnvs.Add(-1) })

	began := time.Now()
	root := RepoRoot(t)

	etcd, storageConfig := etcd3testing.NewUnsecuredEtcd3TestClientServer(t)
	// Registered first so it runs last, after the apiserver stopped using etcd.
	t.Cleanup(func() {
		if err := etcd.V3Client.Close(); err != nil {
			t.Logf("closing etcd client: %v", err)
		}
	})

	env := &Env{
		RepoRoot:    root,
		running:     map[*Scheduler]struct{}{},
		tctx:        kubetesting.Init(t),
		etcd:        etcd,
		storage:     storageConfig,
		restartable: settings.restartable,
	}
	var stable *rest.Config
	if settings.restartable {
		var extra []string
		stable, extra = env.prepareRestartable(t)
		flags = append(flags, extra...)
	}
	env.flags = flags
	// Whichever kube-apiserver runs when the test ends is torn down.
	t.Cleanup(env.stopServer)
	server, err := env.startServer()
	if err != nil {
		t.Fatalf("starting kube-apiserver: %v", err)
	}

	cfg := rest.CopyConfig(server.ClientConfig)
	if stable != nil {
		cfg = stable
		cfg.CAData = env.servingCert
	}
	// The test server's loopback config asks for protobuf, which clients of
	// custom resources (PodGroup) cannot encode: writes would fail with
	// "does not implement the protobuf marshalling interface". Use JSON.
	cfg.ContentType = "application/json"
	cfg.AcceptContentTypes = "application/json"
	if cfg.QPS < 500 {
		cfg.QPS = 500
	}
	if cfg.Burst < 1000 {
		cfg.Burst = 1000
	}
	if settings.qps > 0 {
		cfg.QPS, cfg.Burst = settings.qps, settings.burst
	}
	env.Config = cfg
	env.Client = kubernetes.NewForConfigOrDie(cfg)
	env.PGClient = pgclientset.NewForConfigOrDie(cfg)
	env.Dynamic = dynamic.NewForConfigOrDie(cfg)
	env.APIExt = apiextclientset.NewForConfigOrDie(cfg)

	env.Kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := writeKubeconfig(cfg, env.Kubeconfig); err != nil {
		t.Fatalf("writing kubeconfig: %v", err)
	}

	env.CRDs = env.installCRDs(t, filepath.Join(root, "manifests", "crds"))
	t.Logf("harness: control plane ready in %v (%d CRDs)", time.Since(began).Round(time.Millisecond), len(env.CRDs))
	return env
}

// RepoRoot returns the nearest directory at or above the working directory
// that contains a go.mod file.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("getwd: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod found above the working directory")
		}
		dir = parent
	}
}

// writeKubeconfig writes a kubeconfig file with cfg's server, CA and token.
func writeKubeconfig(cfg *rest.Config, path string) error {
	if cfg.BearerToken == "" && cfg.CertData == nil && cfg.CertFile == "" {
		return errors.New("the test apiserver's client config has no credentials")
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
		CertificateAuthority:     cfg.CAFile,
		TLSServerName:            cfg.ServerName,
		InsecureSkipTLSVerify:    cfg.Insecure,
	}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{
		Token:                 cfg.BearerToken,
		ClientCertificateData: cfg.CertData,
		ClientCertificate:     cfg.CertFile,
		ClientKeyData:         cfg.KeyData,
		ClientKey:             cfg.KeyFile,
	}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	return clientcmd.WriteToFile(*kc, path)
}

// installCRDs creates every CustomResourceDefinition found in dir/*.yaml and
// waits until each is Established and a (dry-run) create of its kind is
// served. The apiextensions server makes the first create within 2s of a CRD
// becoming Established sleep for 2s; the probe absorbs that here, once.
func (e *Env) installCRDs(t *testing.T, dir string) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatalf("listing CRDs: %v", err)
	}
	sort.Strings(files)
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		crds = append(crds, readCRDs(t, f)...)
	}
	ctx := t.Context()
	for _, crd := range crds {
		if _, err := e.APIExt.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating CRD %s: %v", crd.Name, err)
		}
	}
	for _, crd := range crds {
		e.waitEstablished(t, crd.Name)
	}
	// Probe all CRDs at once so their 2s delays overlap.
	var wg sync.WaitGroup
	errs := make([]error, len(crds))
	for i, crd := range crds {
		wg.Go(func() { errs[i] = e.probeCRD(ctx, crd) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return crds
}

// readCRDs decodes every CustomResourceDefinition document in a YAML file.
func readCRDs(t *testing.T, path string) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*apiextensionsv1.CustomResourceDefinition
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("decoding %s: %v", path, err)
		}
		if meta.APIVersion == "" && meta.Kind == "" {
			continue // a document holding only comments
		}
		if meta.Kind != "CustomResourceDefinition" || meta.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
			t.Fatalf("%s: expected only apiextensions.k8s.io/v1 CustomResourceDefinitions, found %s %s", path, meta.APIVersion, meta.Kind)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			t.Fatalf("decoding CRD in %s: %v", path, err)
		}
		out = append(out, crd)
	}
}

// waitEstablished polls until the named CRD reports Established=True.
func (e *Env) waitEstablished(t *testing.T, name string) {
	t.Helper()
	var last *apiextensionsv1.CustomResourceDefinition
	waitFor(t, 30*time.Second, func() (bool, error) {
		crd, err := e.APIExt.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = crd
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	}, func() string {
		return fmt.Sprintf("CRD %s to become Established (last conditions: %v)", name, conditionsOf(last))
	})
}

func conditionsOf(crd *apiextensionsv1.CustomResourceDefinition) []apiextensionsv1.CustomResourceDefinitionCondition {
	if crd == nil {
		return nil
	}
	return crd.Status.Conditions
}

// probeCRD dry-run creates an empty object of the CRD's kind until the
// apiserver serves the create. A validation error still proves the create
// handler ran (and slept its post-Established delay), so it counts as served.
func (e *Env) probeCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	version := ""
	for _, v := range crd.Spec.Versions {
		if v.Served && (version == "" || v.Storage) {
			version = v.Name
		}
	}
	if version == "" {
		return fmt.Errorf("CRD %s serves no version", crd.Name)
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(gvr.GroupVersion().String())
	obj.SetKind(crd.Spec.Names.Kind)
	obj.SetName("harness-probe")
	var client dynamic.ResourceInterface = e.Dynamic.Resource(gvr)
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		obj.SetNamespace(probeNamespace)
		client = e.Dynamic.Resource(gvr).Namespace(probeNamespace)
	}
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, lastErr = client.Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if lastErr == nil || apierrors.IsInvalid(lastErr) || apierrors.IsAlreadyExists(lastErr) {
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s is not served (%s): %w (last error: %v)", crd.Name, gvr, err, lastErr)
	}
	return nil
}
