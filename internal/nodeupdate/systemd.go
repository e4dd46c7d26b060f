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

package nodeupdate

import (
	"context"
	"fmt"

	"github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// dbusSystemd is the host's systemd over its private socket (/run/systemd/private, mounted into
// the Pod): no D-Bus daemon is needed, and root may use it.
type dbusSystemd struct{ conn *dbus.Conn }

// ConnectSystemd connects to the host's systemd.
func ConnectSystemd(ctx context.Context) (Systemd, error) {
	conn, err := dbus.NewSystemdConnectionContext(ctx)
	if err != nil {
		return nil, err
	}
	return &dbusSystemd{conn: conn}, nil
}

// UnitState reads the unit's ActiveState and job. A unit systemd has not loaded (a transient
// unit after it ended cleanly) is listed as inactive, or not at all.
func (s *dbusSystemd) UnitState(ctx context.Context, unit string) (UnitState, error) {
	units, err := s.conn.ListUnitsByNamesContext(ctx, []string{unit})
	if err != nil {
		return UnitState{}, err
	}
	for _, u := range units {
		if u.Name == unit {
			return UnitState{Active: u.ActiveState, JobPending: u.JobId != 0}, nil
		}
	}
	return UnitState{Active: "inactive"}, nil
}

func (s *dbusSystemd) ResetFailed(ctx context.Context, unit string) error {
	return s.conn.ResetFailedUnitContext(ctx, unit)
}

// StartTransient starts a oneshot service: its start job lasts until the command exits, and it
// is inactive (and unloaded) after a clean exit, failed after another. It has no dependency on
// the Pod or anything else, so that it outlives the kubelet's restart and the Pod.
func (s *dbusSystemd) StartTransient(ctx context.Context, unit, description string, command []string) error {
	props := []dbus.Property{
		dbus.PropDescription(description),
		dbus.PropType("oneshot"),
		dbus.PropRemainAfterExit(false),
		dbus.PropExecStart(command, true),
		// A stop (a shutdown) signals the update alone, which stops its command and keeps its
		// journal (a pause); the rest of the unit is killed after.
		{Name: "KillMode", Value: godbus.MakeVariant("mixed")},
	}
	// "fail": the start is refused rather than replacing a job queued for the unit.
	if _, err := s.conn.StartTransientUnitContext(ctx, unit, "fail", props, nil); err != nil {
		return fmt.Errorf("StartTransientUnit: %w", err)
	}
	return nil
}

func (s *dbusSystemd) Close() { s.conn.Close() }
