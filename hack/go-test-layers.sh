#!/usr/bin/env bash
# go-test-layers.sh PACKAGE...: runs go test over the packages, each once, by layer
# (docs/adr/021-test-layers.md):
#   - the unit layer under the race detector (RACE, default -race; RACE= turns it off), so that a
#     data race a unit test provokes fails it (test/framework/nspawn races a machine's boots
#     against their readers);
#   - except the packages whose tests never run their code on two goroutines at once: the pure
#     renderer, its inputs and conversion, the commands over them, the boot simulator. The race
#     detector has nothing to find there, and their tests (goldens, fuzz seeds, re-executed
#     boots) are the layer's heaviest: 3 to 25 times slower under it;
#   - the suites that start a kube-apiserver (INTEGRATION_PKGS, the Makefile's: test/integration,
#     test/release, test/e2e) without it: their time is the API server's and the controllers', which it would slow several times
#     over, within the suites' own waits.
# The second group runs TEST_PACKAGES_AT_ONCE test binaries at once (go test -p; default 4, twice
# the cores here): its suites spend most of their time waiting on their own API servers and
# controllers, so two at a time leave the cores idle half the time.
# GO_TEST_FLAGS and TEST_TIMEOUT are go test's. Every group runs, whatever failed before; the
# status is 1 when any failed.
set -uo pipefail

suites="${INTEGRATION_PKGS:?set by the Makefile}"
single_goroutine='/(ignition(/.*)?|internal/(configinput|convert)|cmd/(render|convert|internal/.*))$'

pkgs="$(go list "$@")" || exit 1
unit="$(grep -Ev "$suites" <<<"$pkgs" || true)"
raced="$(grep -Ev "$single_goroutine" <<<"$unit" || true)"
plain="$(grep -E "$single_goroutine" <<<"$unit" || true)"
apiserver="$(grep -E "$suites" <<<"$pkgs" || true)"

# A race-detecting test binary sleeps a second before it exits (atexit_sleep_ms), for goroutines
# still running to report: a second per package, most of the detector's cost here. A race the
# tests provoke is reported when it happens, and fails the test it happens in.
export GORACE="${GORACE:-atexit_sleep_ms=0}"

status=0
# run FLAGS PACKAGES: one go test over the packages (none: nothing), with the flags.
run() {
  [ -n "$2" ] || return 0
  # shellcheck disable=SC2086 # flags and package lists split on white space
  go test ${GO_TEST_FLAGS:-} $1 -timeout "${TEST_TIMEOUT:-20m}" $2 || status=1
}
run "${RACE--race}" "$raced"
run "-p ${TEST_PACKAGES_AT_ONCE:-4}" "$(echo $plain $apiserver)"
exit "$status"
