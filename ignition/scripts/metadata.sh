# Substitutes the named metadata attributes (name=ATTR: node name, id=ATTR: provider ID part; ATTR
# HOSTNAME: this machine) for their ${ATTR} placeholders in the kubeadm config, checking each value.
cabpi_substitute_metadata() {
  local file=$1 config arg kind attribute value
  shift
  config=$(<"$file")
  for arg in "$@"; do
    kind=${arg%%=*}
    attribute=${arg#*=}
    if [[ $attribute == HOSTNAME ]]; then
      value=$(</proc/sys/kernel/hostname)
    else
      value=${!attribute-}
    fi
    if [[ -z $value ]]; then
      echo "cabpi: metadata attribute $attribute is empty or not set" >&2
      return 1
    fi
    case $kind in
    name)
      value=${value,,}
      if ((${#value} > 253)) || ! [[ $value =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$ ]]; then
        echo "cabpi: metadata attribute $attribute is not a valid node name: $value" >&2
        return 1
      fi
      ;;
    id)
      if ((${#value} > 128)) || ! [[ $value =~ ^[A-Za-z0-9]([-A-Za-z0-9._]*[A-Za-z0-9])?$ ]]; then
        echo "cabpi: metadata attribute $attribute is not a valid provider ID part: $value" >&2
        return 1
      fi
      ;;
    *)
      echo "cabpi: unknown substitution $arg" >&2
      return 1
      ;;
    esac
    config=${config//"\${$attribute}"/"$value"}
  done
  (umask 077 && printf '%s\n' "$config" >"$file.cabpi-new")
  mv -f "$file.cabpi-new" "$file"
}
