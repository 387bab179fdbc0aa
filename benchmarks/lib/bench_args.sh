# Sourced by the benchmark scripts for their command line:
#   bench_args NAME HELP VALUES FLAGS "$@"
# NAME: the script's name in messages; HELP: the line range of the script's
# header that --help / -h prints (e.g. 2,17); VALUES: the options that take
# a value, "opt" (sets variable opt, dashes as underscores) or "opt=var";
# FLAGS: options without a value, "opt=var=value[,var=value...]". Anything
# else, or a value option without its value, is an error naming it (exit 2).
bench_args() {
  local name=$1 help=$2 values=" $3 " flags=" $4 " opt spec var
  shift 4
  while (($#)); do
    case $1 in
      -h | --help) sed -n "${help}p" "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    esac
    opt=${1#--}
    if [[ $1 == --* && $values == *" $opt "* ]]; then
      var=${opt//-/_}
    elif [[ $1 == --* && $values == *" $opt="* ]]; then
      var=${values#* "$opt"=}
      var=${var%% *}
    elif [[ $1 == --* && $flags == *" $opt="* ]]; then
      spec=${flags#* "$opt"=}
      spec=${spec%% *}
      local IFS=,
      for var in $spec; do printf -v "${var%%=*}" '%s' "${var#*=}"; done
      unset IFS
      shift
      continue
    else
      echo "$name: unknown option $1" >&2
      exit 2
    fi
    (($# >= 2)) || { echo "$name: $1 needs a value" >&2; exit 2; }
    printf -v "$var" '%s' "$2"
    shift 2
  done
}
