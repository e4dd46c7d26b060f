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
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// loopDeviceNodes returns the binds that give the machine /dev/loop-control and /dev/loop0 to
// /dev/loop<LoopDevices-1>. The loop devices are the kernel's, shared with the host and every
// machine, and a machine's systemd removes the loop devices it is done with (LOOP_CTL_REMOVE):
// binding the host's /dev/loopN would fail whenever another machine had just removed device N
// ("Failed to stat /dev/loop0"). So the machine gets device nodes of its own (block 7:N, made
// in its directory), which stand whether or not the kernel has the device at the moment; the
// machine's systemd asks /dev/loop-control for a free device (LOOP_CTL_GET_FREE), which adds it.
// The kernel's devices 0 to LoopDevices-1 are added here too (one that exists is left alone).
func (m *Machine) loopDeviceNodes() ([]string, error) {
	control, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("opening /dev/loop-control: %w", err)
	}
	defer control.Close()
	dir := filepath.Join(m.Dir, "dev")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	binds := []string{"--bind=/dev/loop-control"}
	for i := range m.LoopDevices {
		if err := loopControl(control, unix.LOOP_CTL_ADD, i); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("adding /dev/loop%d: %w", i, err)
		}
		node := filepath.Join(dir, fmt.Sprintf("loop%d", i))
		if err := unix.Mknod(node, unix.S_IFBLK|0o660, int(unix.Mkdev(loopMajor, uint32(i)))); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("making the node of loop device %d: %w", i, err)
		}
		binds = append(binds, fmt.Sprintf("--bind=%s:/dev/loop%d", node, i))
	}
	return binds, nil
}

// loopMajor is the block device major number of loop devices.
const loopMajor = 7

func loopControl(control *os.File, request uintptr, i int) error {
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, control.Fd(), request, uintptr(i)); errno != 0 {
		return errno
	}
	return nil
}

var loopName = regexp.MustCompile(`^loop([0-9]+)$`)

// kernelLoopDevices are the indexes of the loop devices the kernel has (/sys/block/loopN).
func kernelLoopDevices() ([]int, error) {
	entries, err := os.ReadDir("/sys/block")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		if m := loopName.FindStringSubmatch(e.Name()); m != nil {
			i, err := strconv.Atoi(m[1])
			if err != nil {
				return nil, err
			}
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out, nil
}

// KeepHostLoopDevices records the loop devices the kernel has and returns what gives the host
// exactly those again, once the machines are gone: machines are given loop devices the kernel may
// not have had (loopDevices adds them), and the machines' systemd removes the loop devices it
// used when it is done with them (LOOP_CTL_REMOVE on a kernel shared with the host), those the host
// had too. A device still attached (EBUSY) is an error.
func KeepHostLoopDevices() (restore func() error, err error) {
	before, err := kernelLoopDevices()
	if err != nil {
		return func() error { return nil }, fmt.Errorf("listing the host's loop devices: %w", err)
	}
	return func() error {
		now, err := kernelLoopDevices()
		if err != nil {
			return fmt.Errorf("listing the host's loop devices: %w", err)
		}
		control, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("opening /dev/loop-control: %w", err)
		}
		defer control.Close()
		var errs []error
		for _, i := range now {
			if !slices.Contains(before, i) {
				if err := loopControl(control, unix.LOOP_CTL_REMOVE, i); err != nil {
					errs = append(errs, fmt.Errorf("removing /dev/loop%d, which the host did not have: %w", i, err))
				}
			}
		}
		for _, i := range before {
			if !slices.Contains(now, i) {
				if err := loopControl(control, unix.LOOP_CTL_ADD, i); err != nil && !errors.Is(err, unix.EEXIST) {
					errs = append(errs, fmt.Errorf("adding back /dev/loop%d, which the host had: %w", i, err))
				}
			}
		}
		return errors.Join(errs...)
	}, nil
}
