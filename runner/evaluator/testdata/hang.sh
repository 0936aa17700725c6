#!/bin/sh
# Never answers; leaves a background child holding stdout, as a stuck CLI might.
cat >/dev/null
sleep 60 &
sleep 60
