# cmake -DSRC=<library> -DDST=<staged copy> -P stage.cmake
# Copies a library into the package's staging folder. A build-tree library carries a build-tree
# run path (e.g. "$ORIGIN/../../plugin:", whose empty entry means the current directory); in the
# package its dependencies sit next to it, so a run path becomes exactly "$ORIGIN".
file(COPY_FILE ${SRC} ${DST})
file(READ_ELF ${DST} RUNPATH _runpath RPATH _rpath)
if(_runpath OR _rpath)
  file(RPATH_SET FILE ${DST} NEW_RPATH "$ORIGIN")
endif()
