# Runs one fuzzer for SECONDS on a fresh copy of its seeds (cmake -P).
file(REMOVE_RECURSE ${CORPUS})
file(MAKE_DIRECTORY ${CORPUS})
foreach(seed ${SEEDS})
  get_filename_component(name ${seed} NAME)
  string(MD5 hash ${seed})
  file(COPY_FILE ${seed} ${CORPUS}/${hash}-${name})
endforeach()
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -print_final_stats=1
          -timeout=25 -rss_limit_mb=4096 -artifact_prefix=${CORPUS}-
          ${CORPUS}
  RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (${status}); its input is kept as ${CORPUS}-crash-*")
endif()
