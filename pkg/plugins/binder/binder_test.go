package binder

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"

	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/plugins/args/argstest"
)

// clientHandle is the part of fwk.Handle that DefaultBinder uses without
// the scheduler's API cacher.
type clientHandle struct {
	fwk.Handle
	cs kubernetes.Interface
}

func (h clientHandle) ClientSet() kubernetes.Interface { return h.cs }
func (h clientHandle) APICacher() fwk.APICacher        { return nil }

// TestBindsAtMostMaxConcurrent: 12 members released together bind through
// at most 3 binding calls at a time (an API server that holds each call until
// told), and every one is bound.
func TestBindsAtMostMaxConcurrent(t *testing.T) {
	const limit, pods = 3, 12
	var inFlight, most atomic.Int32
	release := make(chan struct{})
	var mu sync.Mutex
	bound := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/binding") {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
			return
		}
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		var b v1.Binding
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		bound[b.Name] = b.Target.Name
		mu.Unlock()
		inFlight.Add(-1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	def, err := defaultbinder.New(context.Background(), nil, clientHandle{cs: cs})
	if err != nil {
		t.Fatal(err)
	}
	b := &Binder{bind: def.(fwk.BindPlugin), slots: make(cache.Slots, limit)}
	var wg sync.WaitGroup
	statuses := make([]*fwk.Status, pods)
	for i := range pods {
		wg.Go(func() {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("m", i), UID: "u"}}
			statuses[i] = b.Bind(context.Background(), framework.NewCycleState(), pod, "n1")
		})
	}
	// Before each release, wait until as many calls as the bound allows
	// have arrived: with 12 waiting, that is 3 (never more).
	deadline := time.Now().Add(30 * time.Second)
	for released := range pods {
		for want := int32(min(limit, pods-released)); inFlight.Load() < want; {
			if time.Now().After(deadline) {
				t.Fatalf("%d binding calls in flight after %d released, want %d", inFlight.Load(), released, want)
			}
			time.Sleep(time.Millisecond)
		}
		release <- struct{}{}
	}
	wg.Wait()
	for i, st := range statuses {
		if !st.IsSuccess() {
			t.Errorf("Bind of m%d = %v", i, st)
		}
	}
	if len(bound) != pods {
		t.Errorf("%d pods bound, want %d: %v", len(bound), pods, bound)
	}
	if m := most.Load(); m != limit {
		t.Errorf("at most %d binding calls were in flight at once, want the limit %d", m, limit)
	}
}

// TestBindGivesUpWhenTheCycleEnds: a member waiting for a slot is not bound
// once its context ends, and says why.
func TestBindGivesUpWhenTheCycleEnds(t *testing.T) {
	cs := fake.NewClientset()
	def, err := defaultbinder.New(context.Background(), nil, clientHandle{cs: cs})
	if err != nil {
		t.Fatal(err)
	}
	slots := make(cache.Slots, 1)
	slots.TryAcquire() // the only slot is busy
	b := &Binder{bind: def.(fwk.BindPlugin), slots: slots}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "late"}}
	st := b.Bind(ctx, framework.NewCycleState(), pod, "n1")
	if st.IsSuccess() || !strings.Contains(st.Message(), "waiting to bind ns/late") {
		t.Fatalf("Bind = %v, want an error saying it gave up waiting", st)
	}
	for _, a := range cs.Actions() {
		if a.GetSubresource() == "binding" {
			t.Fatalf("a binding call was made: %v", a)
		}
	}
}

func TestNewRejectsBadArgs(t *testing.T) {
	argstest.Refused(t, New, nil, []argstest.Bad{
		{Name: "zero", Raw: `{"maxConcurrentBinds": 0}`, Field: "maxConcurrentBinds"},
		{Name: "too many", Raw: `{"maxConcurrentBinds": 10001}`, Field: "maxConcurrentBinds"},
		{Name: "misspelt field", Raw: `{"maxConcurrentBind": 8}`, Field: "maxConcurrentBind"},
	})
}

func TestArgsDefaults(t *testing.T) {
	var a Args
	a.SetDefaults()
	if err := a.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if *a.MaxConcurrentBinds != DefaultMaxConcurrentBinds {
		t.Fatalf("maxConcurrentBinds = %d, want %d", *a.MaxConcurrentBinds, DefaultMaxConcurrentBinds)
	}
}
