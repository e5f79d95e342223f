package perf

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// schedulerProc is a scheduler running in a process of its own: the
// external command's, or (W5) the harness's scheduler process.
type schedulerProc struct {
	pid int
	// endpoints reach its HTTPS port; nil when unknown (external mode
	// without -perf.external-metrics).
	endpoints *schedulerEndpoints
}

// scrape reads the process's attempt histogram from its /metrics.
func (p *schedulerProc) scrape(ctx context.Context, match map[string]string) (histogram, error) {
	if p.endpoints == nil {
		return histogram{}, fmt.Errorf("no metrics URL for the scheduler process")
	}
	text, err := p.endpoints.get(ctx, p.endpoints.metrics)
	if err != nil {
		return histogram{}, err
	}
	return parseHistogram(text, attemptMetric, match), nil
}

// schedulerEndpoints reaches a kube-scheduler's own HTTPS endpoints: its
// /metrics and, on the same host and port, /debug/pprof/ (both must be in
// its --authorization-always-allow-paths).
type schedulerEndpoints struct {
	metrics string // the /metrics URL
	base    string // scheme://host:port
	client  *http.Client
}

// newSchedulerEndpoints reaches the scheduler whose /metrics is metricsURL.
func newSchedulerEndpoints(metricsURL string) (*schedulerEndpoints, error) {
	u, err := url.Parse(metricsURL)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("metrics URL %q: want scheme://host:port/path", metricsURL)
	}
	return &schedulerEndpoints{
		metrics: metricsURL,
		base:    u.Scheme + "://" + u.Host,
		client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{
			// The scheduler serves a self-signed certificate.
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // local benchmark only
		}},
	}, nil
}

// open GETs target (a URL, or a path on the scheduler's port) and returns
// the response body, which the caller closes.
func (s *schedulerEndpoints) open(ctx context.Context, target string) (io.ReadCloser, error) {
	if strings.HasPrefix(target, "/") {
		target = s.base + target
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", target, resp.Status)
	}
	return resp.Body, nil
}

// get GETs target (as open) and returns the whole body.
func (s *schedulerEndpoints) get(ctx context.Context, target string) ([]byte, error) {
	body, err := s.open(ctx, target)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return io.ReadAll(body)
}

// liveHeap is the process's runtime.GC + ReadMemStats.HeapAlloc, as
// selfLiveHeap reads this process's: net/http/pprof runs runtime.GC for
// gc=1, and with debug=1 runtime/pprof reads the MemStats it appends before
// it allocates anything for the profile, so nothing the request allocates
// counts (go_memstats_heap_alloc_bytes from /metrics, read after the GC,
// would count the profile's and the gather's garbage).
func (s *schedulerEndpoints) liveHeap(ctx context.Context) (uint64, error) {
	body, err := s.open(ctx, "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return 0, err
	}
	defer body.Close()
	return parseHeapAlloc(body)
}

// saveHeapProfile writes the process's heap profile, taken right after a
// forced collection (gc=1), to path: its in-use figures are then the live
// heap, by allocation site.
func (s *schedulerEndpoints) saveHeapProfile(ctx context.Context, path string) error {
	data, err := s.get(ctx, "/debug/pprof/heap?gc=1")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// parseHeapAlloc reads "# HeapAlloc = N" from a debug=1 heap profile.
func parseHeapAlloc(r io.Reader) (uint64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapAlloc = "); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no HeapAlloc in the heap profile")
}
