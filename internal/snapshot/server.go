// Package snapshot serves a fixed set of API objects read-only, the way
// informers read them (list, then watch): the tests of the feed's informer
// wiring (pkg/feed, pkg/plugins/registry) run the real informers on it
// without a cluster. It never accepts a write. Tools that only need the
// cache filled feed it directly (feed.Deliver).
package snapshot

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// Server serves lists by URL path (e.g. "/api/v1/pods",
// "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"): a list request gets the
// current list, filtered by its label selector and, for pods, its field
// selector (the cache's finished-pod informers select on status.phase); a
// watch from the current resource version stays open without events; any
// other watch is answered 410 Gone, which makes an informer relist.
// Watch-list requests (sendInitialEvents) are refused, so informers use
// list-then-watch. Paths not served answer 404, which discovery and
// informers read as "not installed".
type Server struct {
	requests atomic.Int64

	mu    sync.Mutex
	rv    int
	lists map[string]runtime.Object
	// gone is closed to end the open watches.
	gone chan struct{}
	stop chan struct{}
	srv  *httptest.Server
}

// Start returns a running server with lists (path to a list object with
// its TypeMeta set). Close stops it.
func Start(lists map[string]runtime.Object) (*Server, error) {
	s := &Server{stop: make(chan struct{})}
	if err := s.Set(lists); err != nil {
		return nil, err
	}
	s.srv = httptest.NewServer(s.handler())
	return s, nil
}

// Config is a client configuration for the server, unthrottled: every
// request is served from memory.
func (s *Server) Config() *rest.Config { return &rest.Config{Host: s.srv.URL, QPS: -1} }

// Close ends the open watches and stops the server.
func (s *Server) Close() {
	close(s.stop)
	s.srv.Close()
}

// Requests returns how many requests for served lists the server has
// received (discovery of APIs it does not serve is not counted).
func (s *Server) Requests() int64 { return s.requests.Load() }

// Set replaces the served lists and ends every open watch: informers see a
// watch gap and relist, as after a lost connection or a compacted resource
// version, and deliver the difference (deletes as tombstones).
func (s *Server) Set(lists map[string]runtime.Object) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	rv := fmt.Sprint(s.rv)
	next := make(map[string]runtime.Object, len(lists))
	for path, l := range lists {
		l = l.DeepCopyObject()
		acc, err := meta.ListAccessor(l)
		if err != nil {
			return fmt.Errorf("snapshot: %s: %w", path, err)
		}
		acc.SetResourceVersion(rv)
		next[path] = l
	}
	s.lists = next
	if s.gone != nil {
		close(s.gone)
	}
	s.gone = make(chan struct{})
	return nil
}

// current returns what a request sees now.
func (s *Server) current(path string) (rv string, list runtime.Object, gone <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprint(s.rv), s.lists[path], s.gone
}

func (s *Server) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		rv, list, gone := s.current(r.URL.Path)
		if list != nil {
			s.requests.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case list == nil:
			writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, r.URL.Path+" is not served")
		case r.Method != http.MethodGet:
			writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, r.Method+" is not served: a snapshot is read-only")
		case q.Get("watch") != "true" && q.Get("watch") != "1":
			filtered, err := filter(list, q.Get("labelSelector"), q.Get("fieldSelector"))
			if err != nil {
				writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
				return
			}
			_ = json.NewEncoder(w).Encode(filtered)
		case q.Get("sendInitialEvents") == "true":
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "sendInitialEvents is not served")
		case q.Get("resourceVersion") != rv:
			writeStatus(w, http.StatusGone, metav1.StatusReasonExpired, "too old resource version")
		default:
			w.WriteHeader(http.StatusOK)
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			select {
			case <-s.stop:
			case <-gone:
			case <-r.Context().Done():
			}
		}
	})
}

// filter returns list with only the items its selectors match. Field
// selectors are honoured on pods (the fields the cache selects on) and
// refused elsewhere, so a selector the server cannot evaluate is an error,
// not a silently larger list.
func filter(list runtime.Object, labelSel, fieldSel string) (runtime.Object, error) {
	if labelSel == "" && fieldSel == "" {
		return list, nil
	}
	ls, err := labels.Parse(labelSel)
	if err != nil {
		return nil, err
	}
	fs, err := fields.ParseSelector(fieldSel)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	kept := make([]runtime.Object, 0, len(items))
	for _, it := range items {
		acc, err := meta.Accessor(it)
		if err != nil {
			return nil, err
		}
		if !ls.Matches(labels.Set(acc.GetLabels())) {
			continue
		}
		if !fs.Empty() {
			pod, ok := it.(*v1.Pod)
			if !ok {
				return nil, fmt.Errorf("field selector %q on %T is not served", fieldSel, it)
			}
			if !fs.Matches(podFields(pod)) {
				continue
			}
		}
		kept = append(kept, it)
	}
	out := list.DeepCopyObject()
	if err := meta.SetList(out, kept); err != nil {
		return nil, err
	}
	return out, nil
}

// podFields are the pod fields a field selector may name, as the API
// server defines them.
func podFields(p *v1.Pod) fields.Set {
	return fields.Set{
		"metadata.name":      p.Name,
		"metadata.namespace": p.Namespace,
		"spec.nodeName":      p.Spec.NodeName,
		"spec.schedulerName": p.Spec.SchedulerName,
		"status.phase":       string(p.Status.Phase),
	}
}

func writeStatus(w http.ResponseWriter, code int32, reason metav1.StatusReason, msg string) {
	w.WriteHeader(int(code))
	_ = json.NewEncoder(w).Encode(&metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: code, Reason: reason, Message: msg,
	})
}
