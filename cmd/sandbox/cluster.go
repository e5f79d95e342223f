package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	pgclientset "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

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
