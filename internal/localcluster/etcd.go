package localcluster

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// etcdReadyTimeout bounds the wait for a new embedded etcd to serve.
const etcdReadyTimeout = 60 * time.Second

// portMu serializes picking free ports and binding them: a port is free only
// until someone binds it, and two clusters started at once in one process
// (unit tests of this package, say) must not pick the same ones.
var portMu sync.Mutex

// etcdServer is an embedded single-member etcd and a client of it.
type etcdServer struct {
	server *embed.Etcd
	url    string // the client URL, for --etcd-servers
	client *clientv3.Client
}

// startEtcd starts an embedded single-member etcd with its data under
// dir/etcd and its log in dir/etcd.log, serving clients on a free 127.0.0.1
// port, and waits until it is ready.
func startEtcd(dir string) (*etcdServer, error) {
	portMu.Lock()
	defer portMu.Unlock()
	ports, err := FreePorts(2)
	if err != nil {
		return nil, fmt.Errorf("picking etcd's ports: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = "caldera-localcluster"
	cfg.Dir = filepath.Join(dir, "etcd")
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	cfg.UnsafeNoFsync = true // a throwaway cluster: speed over durability
	clientURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	peerURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))}
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{filepath.Join(dir, "etcd.log")}

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(etcdReadyTimeout):
		e.Close()
		return nil, fmt.Errorf("etcd did not become ready within %v", etcdReadyTimeout)
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{clientURL.String()},
		DialTimeout: 10 * time.Second,
		// The client's default logger writes warnings to stderr; its errors
		// reach the caller as errors.
		Logger: zap.NewNop(),
	})
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("connecting to etcd: %w", err)
	}
	return &etcdServer{server: e, url: clientURL.String(), client: client}, nil
}

// compact compacts etcd up to its current revision, physically, and returns
// that revision.
func (e *etcdServer) compact(ctx context.Context) (int64, error) {
	resp, err := e.client.Get(ctx, "/", clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("reading etcd's revision: %w", err)
	}
	rev := resp.Header.Revision
	if _, err := e.client.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return 0, fmt.Errorf("compacting etcd at revision %d: %w", rev, err)
	}
	return rev, nil
}

// close closes the client, then stops etcd.
func (e *etcdServer) close() error {
	err := e.client.Close()
	e.server.Close()
	if err != nil {
		return fmt.Errorf("closing the etcd client: %w", err)
	}
	return nil
}

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago, e.g. for a component that binds its own port (a scheduler
// process).
func FreePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
