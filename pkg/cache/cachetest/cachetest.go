// Package cachetest builds a filled cache.Cache for the tests and benchmarks
// of packages other than pkg/cache, without a cluster.
//
// It is test-only: import it from _test.go files, never from production code.
// It lives outside pkg/cache because Go test helpers cannot cross packages, and
// it reaches the cache only through its public constructor (cache.Provider),
// feeding the cache's informers from an in-process fake API server.
package cachetest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/cache"
)

// NewForTest returns a cache whose informers have delivered pgs and pods.
//
// Every pod must carry the PodGroup label, be pending and unbound, and every
// PodGroup's minMember must equal its number of pods, so that every group is
// enqueueable. The cache lives until the test ends.
func NewForTest(tb testing.TB, pgs []*v1alpha1.PodGroup, pods []*v1.Pod) *cache.Cache {
	tb.Helper()
	if err := validate(pgs, pods); err != nil {
		tb.Fatalf("cachetest.NewForTest: %v", err)
	}

	stop := make(chan struct{})
	srv := httptest.NewServer(fakeAPI(stop, pgs, pods))
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(func() {
		cancel()
		close(stop)
		srv.Close()
	})

	cfg := &rest.Config{Host: srv.URL, QPS: -1}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		tb.Fatalf("cachetest.NewForTest: %v", err)
	}
	h := &handle{cfg: cfg, cs: cs, factory: informers.NewSharedInformerFactory(cs, 0)}
	// Get returns once the cache's handlers have seen every listed object.
	c, err := cache.NewProvider().Get(ctx, h)
	if err != nil {
		tb.Fatalf("cachetest.NewForTest: %v", err)
	}
	return c
}

// Gangs returns groups PodGroups of size members each in namespace ns, named
// g0, g1, …, with their pods named <group>-p0, <group>-p1, …, each requesting
// 100m cpu: input that NewForTest accepts.
func Gangs(ns string, groups, size int) ([]*v1alpha1.PodGroup, []*v1.Pod) {
	created := metav1.NewTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	pgs := make([]*v1alpha1.PodGroup, 0, groups)
	pods := make([]*v1.Pod, 0, groups*size)
	for g := range groups {
		name := fmt.Sprint("g", g)
		pgs = append(pgs, &v1alpha1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-pg-" + name), CreationTimestamp: created},
			Spec:       v1alpha1.PodGroupSpec{MinMember: int32(size)},
		})
		for i := range size {
			pname := fmt.Sprintf("%s-p%d", name, i)
			pods = append(pods, &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: ns, Name: pname, UID: types.UID(ns + "-" + pname), CreationTimestamp: created,
					Labels: map[string]string{cache.PodGroupLabel: name},
				},
				Spec: v1.PodSpec{Containers: []v1.Container{{
					Name:      "c",
					Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}},
				}}},
				Status: v1.PodStatus{Phase: v1.PodPending},
			})
		}
	}
	return pgs, pods
}

func validate(pgs []*v1alpha1.PodGroup, pods []*v1.Pod) error {
	size := map[cache.GroupKey]int32{}
	for _, p := range pods {
		k, ok := cache.GroupKeyOf(p)
		if !ok {
			return fmt.Errorf("pod %s/%s has no %s label", p.Namespace, p.Name, cache.PodGroupLabel)
		}
		if p.Spec.NodeName != "" || (p.Status.Phase != "" && p.Status.Phase != v1.PodPending) {
			return fmt.Errorf("pod %s/%s is not pending and unbound", p.Namespace, p.Name)
		}
		size[k]++
	}
	for _, pg := range pgs {
		k := cache.GroupKey{Namespace: pg.Namespace, Name: pg.Name}
		if pg.Spec.MinMember != size[k] {
			return fmt.Errorf("PodGroup %s: minMember %d, but %d pods", k, pg.Spec.MinMember, size[k])
		}
		delete(size, k)
	}
	for k := range size {
		return fmt.Errorf("pods of group %s have no PodGroup", k)
	}
	return nil
}

// handle is the part of fwk.Handle that cache.Provider uses; any other method
// panics on the nil embedded interface.
type handle struct {
	fwk.Handle
	cfg     *rest.Config
	cs      kubernetes.Interface
	factory informers.SharedInformerFactory
}

func (h *handle) KubeConfig() *rest.Config                               { return h.cfg }
func (h *handle) ClientSet() kubernetes.Interface                        { return h.cs }
func (h *handle) SharedInformerFactory() informers.SharedInformerFactory { return h.factory }
func (h *handle) GetWaitingPod(types.UID) fwk.WaitingPod                 { return nil }
func (h *handle) Activate(klog.Logger, map[string]*v1.Pod)               {}

// fakeAPI serves list and watch of pods and PodGroups: lists return the given
// objects, watches stay open without events until stop closes or the client
// goes away. Watch-list requests (sendInitialEvents) are refused, so that the
// informers fall back to list-then-watch.
func fakeAPI(stop <-chan struct{}, pgs []*v1alpha1.PodGroup, pods []*v1.Pod) http.Handler {
	podList := &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
	for _, p := range pods {
		podList.Items = append(podList.Items, *p)
	}
	pgList := &v1alpha1.PodGroupList{
		TypeMeta: metav1.TypeMeta{Kind: "PodGroupList", APIVersion: v1alpha1.SchemeGroupVersion.String()},
		ListMeta: metav1.ListMeta{ResourceVersion: "1"},
	}
	for _, pg := range pgs {
		pgList.Items = append(pgList.Items, *pg)
	}
	serve := func(list any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			w.Header().Set("Content-Type", "application/json")
			switch {
			case r.Method != http.MethodGet:
				writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, r.Method+" is not served")
			case q.Get("watch") != "true" && q.Get("watch") != "1":
				_ = json.NewEncoder(w).Encode(list)
			case q.Get("sendInitialEvents") == "true":
				writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "sendInitialEvents is not served")
			default:
				w.WriteHeader(http.StatusOK)
				if f, ok := w.(http.Flusher); ok {
					f.Flush()
				}
				select {
				case <-stop:
				case <-r.Context().Done():
				}
			}
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/api/v1/pods", serve(podList))
	mux.Handle("/apis/"+v1alpha1.SchemeGroupVersion.String()+"/podgroups", serve(pgList))
	return mux
}

func writeStatus(w http.ResponseWriter, code int32, reason metav1.StatusReason, msg string) {
	w.WriteHeader(int(code))
	_ = json.NewEncoder(w).Encode(&metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: code, Reason: reason, Message: msg,
	})
}
