/*
Copyright The cabpi Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package nspawn runs real-node test machines: a copy-on-write root over a node image
// (nodeimage), the Machine's Ignition applied into it with the real ignition-apply as the
// initramfs would, booted with systemd-nspawn (systemd as PID 1) in a network namespace of its
// own, wired by a veth into a bridge the suite owns.
//
// The network: one bridge on the host with the first address of a /24 the suite owns; each
// machine gets one address of it on its veth (host0) and no route beyond it. Nothing the
// machines do leaves the bridge, and the host reaches them over the bridge, not its default route.
package nspawn

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// Network is a bridge on the host with the first address of Prefix.
type Network struct {
	Bridge string
	Prefix netip.Prefix
}

// HostAddr is the bridge's own address: where the machines reach the host (the workload API
// server listens there).
func (n Network) HostAddr() netip.Addr { return n.Prefix.Masked().Addr().Next() }

// Gateway is the address the machines' default route points at, which nobody holds: the
// kubelet takes the node's address from the link of the default route, and a node without one
// registers no address; anything a node sends beyond the /24 goes unanswered on the bridge
// instead of to the host.
func (n Network) Gateway() netip.Addr { return lastAddr(n.Prefix).Prev() }

// MachineAddr is the i-th machine address (0-based), after the host's.
func (n Network) MachineAddr(i int) (netip.Addr, error) {
	a := n.HostAddr()
	for range i + 1 {
		a = a.Next()
	}
	if !n.Prefix.Contains(a) || a == n.Gateway() || a == lastAddr(n.Prefix) {
		return netip.Addr{}, fmt.Errorf("no machine address %d in %s", i, n.Prefix)
	}
	return a, nil
}

// lastAddr is the broadcast address of an IPv4 prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	host := 32 - p.Bits()
	for i := 3; i >= 0 && host > 0; i-- {
		bits := min(host, 8)
		b[i] |= byte(1<<bits - 1)
		host -= bits
	}
	return netip.AddrFrom4(b)
}

// CreateNetwork creates the bridge with its address, up. A bridge of that name left by an
// earlier run is deleted first.
func CreateNetwork(ctx context.Context, bridge string, prefix netip.Prefix) (Network, error) {
	n := Network{Bridge: bridge, Prefix: prefix.Masked()}
	if !n.Prefix.Addr().Is4() || n.Prefix.Bits() > 30 {
		return Network{}, fmt.Errorf("%s: an IPv4 prefix of at most /30 is needed", prefix)
	}
	_ = ip(ctx, "link", "del", bridge) // what an interrupted run left
	steps := [][]string{
		{"link", "add", bridge, "type", "bridge"},
		{"addr", "add", netip.PrefixFrom(n.HostAddr(), n.Prefix.Bits()).String(), "dev", bridge},
		{"link", "set", bridge, "up"},
	}
	for _, s := range steps {
		if err := ip(ctx, s...); err != nil {
			_ = ip(ctx, "link", "del", bridge)
			return Network{}, err
		}
	}
	return n, nil
}

// Delete removes the bridge (the machines' veths go with their machines).
func (n Network) Delete(ctx context.Context) error {
	return ip(ctx, "link", "del", n.Bridge)
}

func ip(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
