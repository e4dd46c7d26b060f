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

package testenv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"k8s.io/klog/v2/textlogger"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/setup"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/leaks"
)

// Suite is what the TestMain of a test package that needs an API server hands Run.
type Suite struct {
	// Options configure the Environment.
	Options
	// Keep are where the suite keeps the Environment (its package variable, a fixtures.Kit's
	// Env): each is set once the Environment is up, before anything else runs.
	Keep []**Environment
	// Cabpi, when set, registers cabpi's controllers with these options as the binary does
	// (SetupCabpi; with Options.Webhooks, its admission webhooks too), before Setup.
	Cabpi *setup.Options
	// CabpiWebhooks registers cabpi's admission webhooks alone (SetupCabpiWebhooks), before
	// Setup; for suites that look at admission without a controller.
	CabpiWebhooks bool
	// Setup runs once the Environment is up and cabpi registered, before the Manager starts:
	// register other reconcilers, build what the tests run. May be nil.
	Setup func(*Environment) error
	// Started runs once the Manager runs: start what runs next to it (a cabpi manager of its
	// own, as deployed). The stop it returns runs after the tests, before the Environment stops;
	// its error fails the run. May be nil.
	Started func(*Environment) (stop func() error, err error)
	// LeakCheck looks, after the tests, for the secret material they made (join tokens,
	// private keys, rendered data) in every line the Manager logged and in every event
	// (package leaks); any found fails the run. The Manager then logs at verbosity 5 (everything
	// cabpi logs) into memory, and to stderr too with CABPI_TEST_LOG; Options.Logger must be nil.
	LeakCheck bool
}

// Run is the TestMain of a test package that needs an API server, which calls
// os.Exit(testenv.Run(m, suite)): it starts the Environment, keeps it where suite.Keep says,
// registers cabpi as suite.Cabpi and suite.CabpiWebhooks say, runs suite.Setup, starts the
// Manager, runs suite.Started, the tests, the stop Started returned and the leak check, and
// stops the Environment. It returns the tests' exit code, or 1 when any of the rest failed.
func Run(m *testing.M, suite Suite) int {
	var log *leaks.Log
	if suite.LeakCheck {
		if suite.Logger != nil {
			fmt.Fprintln(os.Stderr, "testenv: Suite.LeakCheck reads the Manager's log: leave Options.Logger nil")
			return 1
		}
		log = &leaks.Log{}
		var out io.Writer = log
		if os.Getenv("CABPI_TEST_LOG") != "" {
			out = io.MultiWriter(log, os.Stderr)
		}
		// Verbosity 5 is everything the manager itself logs (debug included); from 8 on,
		// client-go dumps request and response bodies, which is Kubernetes' own behaviour.
		logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(5), textlogger.Output(out)))
		suite.Logger = &logger
	}
	e, err := Start(context.Background(), suite.Options)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := e.run(m, suite, log)
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	return code
}

// run is Run from a started Environment to the moment it stops.
func (e *Environment) run(m *testing.M, suite Suite, log *leaks.Log) int {
	if err := e.setUp(suite); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: suite set-up:", err)
		return 1
	}
	if err := e.StartManager(e.ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stop := func() error { return nil }
	if suite.Started != nil {
		s, err := suite.Started(e)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testenv: suite start:", err)
			return 1
		}
		if s != nil {
			stop = s
		}
	}

	code := m.Run()

	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if log != nil {
		if err := e.checkLeaks(log, code == 0 && wholeRun()); err != nil {
			fmt.Fprintln(os.Stderr, "--- FAIL:", err)
			code = 1
		}
	}
	return code
}

// setUp is the suite's set-up on the Environment, before the Manager starts.
func (e *Environment) setUp(suite Suite) error {
	for _, keep := range suite.Keep {
		*keep = e
	}
	if suite.Cabpi != nil {
		if err := e.SetupCabpi(*suite.Cabpi); err != nil {
			return err
		}
	}
	if suite.CabpiWebhooks {
		if err := e.SetupCabpiWebhooks(); err != nil {
			return err
		}
	}
	if suite.Setup != nil {
		return suite.Setup(e)
	}
	return nil
}

// checkLeaks runs the leak check on what the run made, whatever tests ran: a partial run (-run,
// -skip) made fewer secrets, maybe none, and is checked all the same. Only a whole passing run
// must have made enough secrets for the check to prove anything.
func (e *Environment) checkLeaks(log *leaks.Log, whole bool) error {
	found, looked, err := leaks.Find(e.ctx, e.Client, log.String())
	if err != nil {
		return fmt.Errorf("leak check: %w", err)
	}
	if len(found) > 0 {
		// One line each, as a failed test prints.
		return errors.New("secret material leaked: " + strings.Join(found, "\n--- FAIL: secret material leaked: "))
	}
	if whole && looked < 3 {
		return fmt.Errorf("leak check: only %d secrets to look for: the suite made too few to prove anything", looked)
	}
	fmt.Printf("leak check: none of %d secrets in %d bytes of manager logs nor in any event\n", looked, len(log.String()))
	return nil
}

// wholeRun says whether every test of the package ran: no -test.run or -test.skip.
func wholeRun() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return true
}
