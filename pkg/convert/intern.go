package convert

import (
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// maxInterned bounds the table of shared requests: past it, a request of a
// new shape gets a list of its own, as every request did before.
const maxInterned = 4096

// RequestInterner shares one request list among the pods that request the
// same amounts. A batch job's pods mostly do (every worker asks for the same
// cpu, memory and GPUs), and a small map costs a few hundred bytes, a large
// part of what the cache holds per pod. Shared lists are never changed in
// place: the cache only reads a pod's request (and replaces it when it
// changes), adding it into or subtracting it from totals of its own.
type RequestInterner struct {
	lists map[string]resources.List
	key   []byte
	names []string
	// scratch and scratchQ are PodRequest's working lists.
	scratch  resources.List
	scratchQ v1.ResourceList
	// memoPod is the pod one ApplyPod takes (nil outside it), and memoReq
	// its request once summed: a gang member's record and its account both
	// ask for it, and a restart takes every bound member through both.
	memoPod *v1.Pod
	memoReq resources.List
	// last is the list intern returned last: a restart lists a job's pods
	// one after another, and they mostly ask alike, so most lists are
	// matched without building their key.
	last resources.List
}

// Remember makes PodRequest sum pod's request once until forget: the
// caller holds the pod unchanged in between (one ApplyPod, under the lock).
func (in *RequestInterner) Remember(pod *v1.Pod) { in.memoPod, in.memoReq = pod, nil }

// Forget ends Remember, so that no pod object is kept beyond its event.
func (in *RequestInterner) Forget() { in.memoPod, in.memoReq = nil, nil }

// PodRequest is PodRequest(pod), shared, and old itself when the
// request did not change (a bind, a status update); the remembered pod's
// is summed once (Remember).
func (in *RequestInterner) PodRequest(pod *v1.Pod, old resources.List) resources.List {
	if pod != in.memoPod {
		return in.sum(pod, old)
	}
	if in.memoReq == nil {
		in.memoReq = in.sum(pod, old)
	}
	return in.memoReq
}

// sum is podRequest without the memo. The common shape
// (containers only, no init containers, overhead or pod-level resources)
// is summed into scratch lists and compared, without the allocations of
// resourcehelper.PodRequests: a restart takes every bound pod through
// here.
func (in *RequestInterner) sum(pod *v1.Pod, old resources.List) resources.List {
	spec := &pod.Spec
	if len(spec.InitContainers) > 0 || spec.Overhead != nil || spec.Resources != nil {
		return in.intern(PodRequest(pod))
	}
	if in.scratch == nil {
		in.scratch, in.scratchQ = resources.List{}, v1.ResourceList{}
	}
	clear(in.scratch)
	if len(spec.Containers) == 1 {
		// One container (most pods): its requests are the sum.
		for name, q := range spec.Containers[0].Resources.Requests {
			setQuantity(in.scratch, name, q)
		}
	} else {
		// Summed as Quantities and converted once, as
		// Resources(PodRequests) does, so rounding of fractional
		// amounts is the same.
		clear(in.scratchQ)
		for i := range spec.Containers {
			for name, q := range spec.Containers[i].Resources.Requests {
				sum := in.scratchQ[name]
				sum.Add(q)
				in.scratchQ[name] = sum
			}
		}
		for name, q := range in.scratchQ {
			setQuantity(in.scratch, name, q)
		}
	}
	if old != nil && old.Equal(in.scratch) {
		return old
	}
	return in.intern(in.scratch)
}

// setQuantity sets resource name of l to q, as Resources does.
func setQuantity(l resources.List, name v1.ResourceName, q resource.Quantity) {
	if name == v1.ResourceCPU {
		l[resources.CPU] = q.MilliValue()
	} else {
		l[string(name)] = q.Value()
	}
}

// intern returns a list equal to l that may be shared; l itself is not kept.
// O(len(l) log len(l)); allocation-free when the shape is already known.
func (in *RequestInterner) intern(l resources.List) resources.List {
	if sameEntries(in.last, l) {
		return in.last
	}
	in.last = in.lookup(l)
	return in.last
}

// sameEntries reports whether a and b hold the same resources (a zero
// amount included) with the same amounts; a nil a matches nothing.
func sameEntries(a, b resources.List) bool {
	if a == nil || len(a) != len(b) {
		return false
	}
	for name, v := range b {
		if w, ok := a[name]; !ok || w != v {
			return false
		}
	}
	return true
}

// lookup is intern by the list's key in the table.
func (in *RequestInterner) lookup(l resources.List) resources.List {
	in.names = in.names[:0]
	for name := range l {
		in.names = append(in.names, name)
	}
	slices.Sort(in.names)
	in.key = in.key[:0]
	for _, name := range in.names {
		in.key = append(in.key, name...)
		in.key = append(in.key, '=')
		in.key = strconv.AppendInt(in.key, l[name], 10)
		in.key = append(in.key, ',')
	}
	if shared, ok := in.lists[string(in.key)]; ok {
		return shared
	}
	own := l.Clone()
	if len(in.lists) < maxInterned {
		if in.lists == nil {
			in.lists = map[string]resources.List{}
		}
		in.lists[string(in.key)] = own
	}
	return own
}
