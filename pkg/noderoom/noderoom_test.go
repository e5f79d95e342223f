package noderoom

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/caldera-sched/caldera/pkg/resources"
)

func node(name string, opts ...func(*v1.Node)) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}}}
	for _, o := range opts {
		o(n)
	}
	return n
}

func labelled(k, v string) func(*v1.Node) { return func(n *v1.Node) { n.Labels[k] = v } }
func tainted(key string, effect v1.TaintEffect) func(*v1.Node) {
	return func(n *v1.Node) { n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Effect: effect}) }
}
func cordoned(n *v1.Node) { n.Spec.Unschedulable = true }

func cpu(m int64) resources.List { return resources.List{resources.CPU: m} }

// Bound pods are counted on their node, in all and per queue, whichever
// event comes first; a node deleted with pods on it stays until they go.
func TestRoomsBindAndDelete(t *testing.T) {
	var r Rooms
	r.Bind("n1", "q", cpu(1000), 1) // the pod's event before the node's
	if n := r.Node("n1"); n == nil || n.Obj != nil || n.Used[resources.CPU] != 1000 {
		t.Fatalf("a pod on an unknown node: %+v, want its request counted", n)
	}
	r.SetNode(node("n1"), cpu(4000))
	r.Bind("n1", "", cpu(500), 1)
	r.Requeue("n1", "q", "p", cpu(1000))
	n := r.Node("n1")
	if n.Used[resources.CPU] != 1500 || n.ByQueue["q"][resources.CPU] != 0 || n.ByQueue["p"][resources.CPU] != 1000 {
		t.Errorf("used %v, by queue %v; want 1500 used, 1000 for p, 0 for q", n.Used, n.ByQueue)
	}
	r.DeleteNode("n1")
	if n := r.Node("n1"); n == nil || n.Obj != nil {
		t.Fatalf("a deleted node with pods: %+v, want kept without its object", n)
	}
	r.Bind("n1", "p", cpu(1000), -1)
	r.Bind("n1", "", cpu(500), -1)
	if n := r.Node("n1"); n != nil {
		t.Errorf("a deleted node whose pods left: %+v, want forgotten", n)
	}
}

func TestRoomsTainted(t *testing.T) {
	var r Rooms
	r.SetNode(node("a"), cpu(1000))
	if r.Tainted() {
		t.Fatal("an untainted node counts as tainted")
	}
	r.SetNode(node("a", tainted("x", v1.TaintEffectPreferNoSchedule)), cpu(1000))
	if r.Tainted() {
		t.Error("a PreferNoSchedule taint limits who may use the node")
	}
	r.SetNode(node("a", cordoned), cpu(1000))
	r.SetNode(node("b", tainted("x", v1.TaintEffectNoExecute)), cpu(1000))
	r.SetNode(node("a"), cpu(1000))
	if !r.Tainted() {
		t.Error("b's NoExecute taint is not counted")
	}
	r.DeleteNode("b")
	if r.Tainted() {
		t.Error("the tainted node was deleted and still counts")
	}
}

// Prepare lays nodes out by name with their free room; only named nodes
// with an object count, and the largest free amount per resource is kept.
func TestPassPrepare(t *testing.T) {
	var r Rooms
	r.SetNode(node("b"), resources.List{resources.CPU: 4000, "memory": 8})
	r.SetNode(node("a"), resources.List{resources.CPU: 2000, "memory": 16})
	r.Bind("b", "q", cpu(1500), 1)
	r.Bind("gone", "q", cpu(1000), 1) // a pod on a node not known yet
	var p Pass
	p.Prepare(&r, resources.List{resources.CPU: 6000, "memory": 24})
	if !slices.Equal(p.Names, []string{"a", "b"}) || !slices.Equal(p.Resources, []string{resources.CPU, "memory"}) {
		t.Fatalf("names %v, resources %v", p.Names, p.Resources)
	}
	if want := []int64{2000, 16, 2500, 8}; !slices.Equal(p.Free.Free, want) {
		t.Errorf("free %v, want %v", p.Free.Free, want)
	}
	if want := []int64{2500, 16}; !slices.Equal(p.Free.Max, want) {
		t.Errorf("max %v, want %v", p.Free.Max, want)
	}
	gen := p.ResourceGen
	p.Prepare(&r, resources.List{resources.CPU: 6000, "memory": 24})
	if p.ResourceGen != gen {
		t.Error("the same resources counted as a change")
	}
	p.Prepare(&r, resources.List{resources.CPU: 6000, "memory": 24, "gpu": 1})
	if p.ResourceGen == gen {
		t.Error("a new resource was not counted as a change")
	}
}

func TestPassEligibleFor(t *testing.T) {
	var r Rooms
	r.SetNode(node("a", labelled("disk", "ssd")), cpu(1000))
	r.SetNode(node("b"), cpu(1000))
	r.SetNode(node("c", tainted("gpu", v1.TaintEffectNoSchedule)), cpu(1000))
	r.SetNode(node("d", cordoned), cpu(1000))
	var p Pass
	p.Prepare(&r, cpu(4000))
	ssd := &v1.Pod{Spec: v1.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}}}
	tolerant := &v1.Pod{Spec: v1.PodSpec{Tolerations: []v1.Toleration{{Key: "gpu", Operator: v1.TolerationOpExists}}}}
	for _, tt := range []struct {
		name string
		pod  *v1.Pod
		want []int32
	}{
		{"no constraint: the untainted nodes", &v1.Pod{}, []int32{0, 1}},
		{"a selector", ssd, []int32{0}},
		{"a toleration: its taint's node too", tolerant, []int32{0, 1, 2}},
	} {
		if got := p.EligibleFor(tt.pod); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if p.Unconstrained(&v1.Pod{}) {
		t.Error("with tainted nodes, a pod without constraints may not use every node")
	}
}

// ClassOf puts a request over the pass's resources; asking for a resource
// no node has fits nowhere.
func TestPassClassOf(t *testing.T) {
	var r Rooms
	r.SetNode(node("a"), resources.List{resources.CPU: 4000, "memory": 8})
	var p Pass
	p.Prepare(&r, resources.List{resources.CPU: 4000, "memory": 8})
	c := p.ClassOf(&v1.Pod{}, resources.List{resources.CPU: 1500}, 3)
	if !slices.Equal(c.Request, []int64{1500, 0}) || c.Count != 3 || c.Nodes != nil {
		t.Errorf("class %+v, want cpu 1500 x 3 on every node", c)
	}
	mark := p.Mark()
	gpu := p.ClassOf(&v1.Pod{}, resources.List{resources.CPU: 1, "gpu": 1}, 1)
	if gpu.Nodes == nil || len(gpu.Nodes) != 0 {
		t.Errorf("a request for a resource no node has: nodes %v, want none", gpu.Nodes)
	}
	p.Release(mark)
	if p.Mark() != mark {
		t.Error("Release did not give back the vector")
	}
	p.SetStart(c, 7)
	if got := p.Start(c); got != 7 {
		t.Errorf("remembered start %d, want 7", got)
	}
	p.Prepare(&r, resources.List{resources.CPU: 4000, "memory": 8})
	if got := p.Start(c); got != 0 {
		t.Errorf("a start remembered across passes: %d", got)
	}
}
