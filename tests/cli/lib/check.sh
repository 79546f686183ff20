# Why: the CLI test scripts share one way to record a check and to run a
# command expecting an exit status; source this after setting TMP.
pass=0
fail=0
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
