package queue

// prepare lays out the pass's per-queue and cluster amounts by the Pending's
// resource positions, so the checks index them directly.
func (p *Pending) prepare(c Cluster) {
	p.mapResources(c)
	ps := &p.pass
	s := ps.s
	ps.realCap = p.byPosition(ps.realCap, s.realCap)
	ps.deserved = p.byPosition(ps.deserved, s.deserved)
	ps.selfDes = p.byPosition(ps.selfDes, s.selfDeserved)
	ps.alloc = p.byPosition(ps.alloc, s.alloc)
	ps.infl = p.byPosition(ps.infl, s.inflight)
	ps.selfAl = p.byPosition(ps.selfAl, s.selfAlloc)
	ps.selfIn = p.byPosition(ps.selfIn, s.selfInflight)
	p.prepareCluster(c)
	p.prepareReclaimable()
	p.prepareClusterReclaim()
}

// mapResources gives every resource the Shares or the cluster name a
// position in the Pending, maps those positions to the Shares' (ps.toS),
// and takes the tree's shape the checks walk.
func (p *Pending) mapResources(c Cluster) {
	ps := &p.pass
	s := ps.s
	for _, k := range s.names {
		p.resource(k)
	}
	for k := range c.Allocatable {
		p.resource(k)
	}
	r, n := len(p.rnames), len(s.tree.specs)
	ps.r = r
	ps.parent = s.tree.parent
	ps.hasKids = growBools(ps.hasKids, n)
	for i := range n {
		ps.hasKids[i] = len(s.tree.children[i]) > 0
	}
	ps.toS = growInts(ps.toS, r)
	for i := range ps.toS {
		ps.toS[i] = -1
	}
	for i, k := range s.names {
		ps.toS[p.rindex[k]] = i
	}
}

// byPosition copies src, per-node amounts of the Shares (s.r per node), into
// dst by the Pending's resource positions (ps.r per node), and returns dst.
// Amounts of resources the Shares lack, and of broken queues, are zero.
func (p *Pending) byPosition(dst, src []int64) []int64 {
	ps := &p.pass
	s := ps.s
	r, rs, n := ps.r, s.r, len(s.tree.specs)
	dst = growInt64s(dst, n*r)
	clear(dst)
	for _, i := range s.tree.order {
		for j, sj := range ps.toS {
			if sj >= 0 {
				dst[i*r+j] = src[i*rs+sj]
			}
		}
	}
	return dst
}

// prepareCluster fills the cluster's limit (allocatable x overcommit,
// ps.ceil) and its use (what pods on nodes hold plus every queue's
// inflight, known queue or not, ps.cused).
func (p *Pending) prepareCluster(c Cluster) {
	ps := &p.pass
	ps.ceil = growInt64s(ps.ceil, ps.r)
	ps.cused = growInt64s(ps.cused, ps.r)
	clear(ps.ceil)
	clear(ps.cused)
	for k, v := range c.Allocatable {
		ps.ceil[p.rindex[k]] = scale(nn(v), ps.o.OvercommitFactor)
	}
	for k, v := range c.Used {
		if i, ok := p.rindex[k]; ok {
			ps.cused[i] = nn(v)
		}
	}
	for j, sj := range ps.toS {
		if sj >= 0 {
			ps.cused[j] = satAdd(ps.cused[j], ps.s.inflightAll[sj])
		}
	}
}

// prepareClusterReclaim sums, with Options.Reclaim, what every healthy
// reclaimable queue's own groups hold above what they keep (their deserved
// part, or their guarantee when larger): the room a reclaim plan can take
// back anywhere in the cluster, which checkClusterRoom lets a group within
// its share count.
func (p *Pending) prepareClusterReclaim() {
	ps := &p.pass
	s := ps.s
	r := ps.r
	ps.reclaim = growInt64s(ps.reclaim, r)
	clear(ps.reclaim)
	if !ps.o.Reclaim {
		return
	}
	for i := range len(s.tree.specs) {
		spec := s.tree.specs[i]
		if !spec.Reclaimable || s.tree.problems[i] != nil {
			continue
		}
		for j := range r {
			keep := max(ps.selfDes[i*r+j], nn(spec.Guarantee[p.rnames[j]]))
			if over := ps.selfAl[i*r+j] - keep; over > 0 {
				ps.reclaim[j] = satAdd(ps.reclaim[j], over)
			}
		}
	}
}
