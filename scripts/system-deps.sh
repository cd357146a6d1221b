#!/usr/bin/env bash
# Debian packages the project needs, installed only when missing:
#   chromium + fonts   real-browser tests and figure export (kaleido finds /usr/bin/chromium)
#   postgresql         the annotation store's concurrency tests run against a real server
#   latexmk, texlive   the report's main.tex and table snippets are compiled in the tests
#   texlive-xetex      main.tex prints Chinese (Noto CJK) with XeLaTeX; pdflatex prints it as [U+XXXX]
#   poppler-utils      pdftotext/pdfinfo: the tests read main.pdf's pages and captions
#   default-jre-headless  Java 17 for pyspark (local mode): docs/store.md's Spark query is run in the tests
set -euo pipefail
need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
[ -d /usr/share/fonts/truetype/liberation ] || need+=(fonts-liberation)
[ -d /usr/share/fonts/opentype/noto ] || need+=(fonts-noto-cjk)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v latexmk >/dev/null 2>&1 || need+=(latexmk)
command -v pdflatex >/dev/null 2>&1 || need+=(texlive-latex-base texlive-latex-recommended texlive-latex-extra)
command -v xelatex >/dev/null 2>&1 || need+=(texlive-xetex)
command -v pdftotext >/dev/null 2>&1 || need+=(poppler-utils)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  echo "installing Debian packages: ${need[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need[@]}"
fi
