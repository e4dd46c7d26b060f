package openstack

import (
	"os"
	"testing"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/providers/providertest"
)

func TestMain(m *testing.M) { os.Exit(providertest.Main(m)) }
