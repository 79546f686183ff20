# Why: the CLI test scripts share one way to record a check and to run a
# command expecting an exit status; source this after setting TMP (or call
# fresh_tmp).
pass=0
fail=0
fresh_tmp() { # fresh_tmp NAME: an empty $TMP of this script's own
    TMP=${FMLP_TEST_TMP:-/tmp}/$1
    rm -rf "$TMP"
    mkdir -p "$TMP"
}
check() { # check DESCRIPTION COMMAND...
    local what=$1
    shift
    if "$@"; then
        echo "ok   $what"
        pass=$((pass + 1))
    else
        echo "FAIL $what"
        fail=$((fail + 1))
    fi
}
status_is() { # status_is WANT COMMAND... (stdout, stderr kept in $TMP/out, $TMP/err)
    local want=$1
    shift
    "$@" >"$TMP/out" 2>"$TMP/err"
    [ $? -eq "$want" ]
}
