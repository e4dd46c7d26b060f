package nspawn

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// loopDevices makes sure the kernel has loop devices 0 to n-1 (LOOP_CTL_ADD; one that exists is
// left alone) and returns the device nodes a machine is given: /dev/loop-control and
// /dev/loop0 to /dev/loop<n-1>. devtmpfs creates the nodes of devices the kernel adds.
func loopDevices(n int) ([]string, error) {
	control, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("opening /dev/loop-control: %w", err)
	}
	defer control.Close()
	devices := []string{"/dev/loop-control"}
	for i := range n {
		if err := loopControl(control, unix.LOOP_CTL_ADD, i); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("adding /dev/loop%d: %w", i, err)
		}
		if _, err := os.Stat(fmt.Sprintf("/dev/loop%d", i)); err != nil {
			return nil, fmt.Errorf("loop device %d has no node in /dev: %w", i, err)
		}
		devices = append(devices, fmt.Sprintf("/dev/loop%d", i))
	}
	return devices, nil
}

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
