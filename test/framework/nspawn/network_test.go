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

package nspawn

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The host holds the first address, machines the next ones; the gateway nobody holds and the
// broadcast address are never handed out.
func TestAddresses(t *testing.T) {
	n := Network{Bridge: "b", Prefix: netip.MustParsePrefix("10.213.87.0/24")}
	assert.Equal(t, "10.213.87.1", n.HostAddr().String())
	assert.Equal(t, "10.213.87.254", n.Gateway().String())
	a, err := n.MachineAddr(0)
	require.NoError(t, err)
	assert.Equal(t, "10.213.87.2", a.String())
	a, err = n.MachineAddr(251)
	require.NoError(t, err)
	assert.Equal(t, "10.213.87.253", a.String())
	_, err = n.MachineAddr(252)
	assert.Error(t, err, "the gateway is nobody's")
	_, err = n.MachineAddr(253)
	assert.Error(t, err, "the broadcast address")
}
