package main

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
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	pgclientset "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
	"sigs.k8s.io/yaml"

	qclientset "github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned"
)

// clients reach the sandbox's apiserver as admin.
type clients struct {
	kube    kubernetes.Interface
	pg      pgclientset.Interface
	queues  qclientset.Interface
	dynamic dynamic.Interface
	apiext  apiextclientset.Interface
}

func newClients(cfg *rest.Config) (*clients, error) {
	c := &clients{}
	var err error
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.pg, err = pgclientset.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.queues, err = qclientset.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.apiext, err = apiextclientset.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// installCRDs creates every CRD in dir/*.yaml and waits until each serves
// creates (absorbing apiextensions' 2 s delay after Established here, once).
func (c *clients) installCRDs(ctx context.Context, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRD files in %s", dir)
	}
	sort.Strings(files)
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		got, err := readCRDs(f)
		if err != nil {
			return err
		}
		crds = append(crds, got...)
	}
	for _, crd := range crds {
		if _, err := c.apiext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(crds))
	for i, crd := range crds {
		wg.Go(func() { errs[i] = c.waitServed(ctx, crd) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func readCRDs(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*apiextensionsv1.CustomResourceDefinition
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", path, err)
		}
		if meta.Kind != "CustomResourceDefinition" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(doc, crd); err != nil {
			return nil, fmt.Errorf("decoding CRD in %s: %w", path, err)
		}
		out = append(out, crd)
	}
}

// waitServed polls a dry-run create of the CRD's kind until it is served.
func (c *clients) waitServed(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	version := ""
	for _, v := range crd.Spec.Versions {
		if v.Served && (version == "" || v.Storage) {
			version = v.Name
		}
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(gvr.GroupVersion().String())
	obj.SetKind(crd.Spec.Names.Kind)
	obj.SetName("sandbox-probe")
	var client dynamic.ResourceInterface = c.dynamic.Resource(gvr)
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		obj.SetNamespace(metav1.NamespaceDefault)
		client = c.dynamic.Resource(gvr).Namespace(metav1.NamespaceDefault)
	}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, last = client.Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last == nil || apierrors.IsInvalid(last) || apierrors.IsAlreadyExists(last), nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not served: %w (last: %v)", crd.Name, err, last)
	}
	return nil
}

// nodeResources is what each simulated node offers.
func nodeResources(o sandboxOptions) corev1.ResourceList {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(o.nodeCPU),
		corev1.ResourceMemory: resource.MustParse(o.nodeMemory),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	if o.nodeGPUs > 0 {
		res["nvidia.com/gpu"] = *resource.NewQuantity(int64(o.nodeGPUs), resource.DecimalSI)
	}
	return res
}

// createNodes creates the simulated nodes with their capacity. Call it
// before KWOK starts: KWOK's node-initialize stage patches default capacity
// into a node that has none yet.
func (c *clients) createNodes(ctx context.Context, o sandboxOptions) error {
	for i := range o.nodes {
		name := fmt.Sprintf("kwok-node-%d", i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Labels:      map[string]string{"type": "kwok", corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"},
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			},
		}
		if _, err := c.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating node %s: %w", name, err)
		}
		// Status is dropped on create.
		if err := c.setNodeResources(ctx, name, nodeResources(o)); err != nil {
			return fmt.Errorf("setting node %s's capacity: %w", name, err)
		}
	}
	return nil
}

func (c *clients) setNodeResources(ctx context.Context, name string, res corev1.ResourceList) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		node, err := c.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node.Status.Capacity = res
		node.Status.Allocatable = res
		_, err = c.kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// waitNodesReady waits until KWOK has made every node Ready, with the
// sandbox's capacity (restoring it should anything have replaced it).
func (c *clients) waitNodesReady(ctx context.Context, o sandboxOptions) error {
	want := nodeResources(o)
	ready := 0
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		nodes, err := c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready = 0
		for _, n := range nodes.Items {
			if got := n.Status.Allocatable[corev1.ResourceCPU]; got.Cmp(want[corev1.ResourceCPU]) != 0 {
				if err := c.setNodeResources(ctx, n.Name, want); err != nil {
					return false, nil
				}
				continue
			}
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == o.nodes, nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d nodes Ready: %w", ready, o.nodes, err)
	}
	return nil
}
