# Layering, enforced by the build (docs/ARCHITECTURE.md, "Layers"):
#   tephra_core, tephra_api, tephra_sched  link no I/O library and cannot include one;
#   tephra_reconcilers, tephra_webhooks     see controller interfaces only, never cpprestsdk/OpenSSL/Boost.Asio;
#   tephra_scheduler                        never links reconcilers;
#   CLI11 only in cmd/ (unlayered) and tephra_ctl, the one "cli" target (adapters-only plus CLI11).
# Two mechanisms: (1) "poison" include directories searched before /usr/include, whose headers are
# #error stubs, so `#include <cpprest/http_client.h>` fails to compile in a forbidden target; (2) a
# configure-time check of each target's link libraries. tests/layering proves (1) works.

set(TEPHRA_IO_HEADERS
  cpprest/http_client.h cpprest/http_listener.h cpprest/json.h cpprest/asyncrt_utils.h cpprest/uri.h
  cpprest/containerstream.h cpprest/producerconsumerstream.h cpprest/rawptrstream.h cpprest/filestream.h
  cpprest/ws_client.h cpprest/http_msg.h pplx/pplxtasks.h
  openssl/ssl.h openssl/err.h openssl/evp.h openssl/pem.h openssl/rsa.h openssl/x509.h openssl/x509v3.h
  openssl/bio.h openssl/crypto.h openssl/bn.h openssl/rand.h openssl/sha.h
  boost/asio.hpp boost/asio/ssl.hpp boost/beast.hpp httplib.h)
set(TEPHRA_CLI_HEADERS CLI/CLI.hpp CLI/App.hpp CLI/Option.hpp)
# re2: only through tephra_pattern (pattern/), the one adapter; cctz only through tephra_tz (tz/).
set(TEPHRA_CORE_EXTRA_HEADERS yaml-cpp/yaml.h spdlog/spdlog.h spdlog/logger.h fmt/format.h ${TEPHRA_CLI_HEADERS} re2/re2.h
  cctz/time_zone.h cctz/civil_time.h cctz/zone_info_source.h)

function(_tephra_make_poison group)
  set(dir ${CMAKE_BINARY_DIR}/poison/${group})
  foreach(h IN LISTS ARGN)
    set(f ${dir}/${h})
    if(NOT EXISTS ${f})
      file(WRITE ${f} "#error \"layering violation: <${h}> may not be included by ${group} targets (see docs/ARCHITECTURE.md)\"\n")
    endif()
  endforeach()
endfunction()
_tephra_make_poison(core ${TEPHRA_IO_HEADERS} ${TEPHRA_CORE_EXTRA_HEADERS})
_tephra_make_poison(adapters-only ${TEPHRA_IO_HEADERS} ${TEPHRA_CLI_HEADERS})
# The command-line layer (tephra_ctl): an adapter that may also parse flags with CLI11.
_tephra_make_poison(cli ${TEPHRA_IO_HEADERS})

# tephra_layer(<target> core|adapters-only|cli)
function(tephra_layer target group)
  target_include_directories(${target} BEFORE PRIVATE ${CMAKE_BINARY_DIR}/poison/${group})
  set_property(GLOBAL APPEND PROPERTY TEPHRA_LAYERED_TARGETS "${target}:${group}")
endfunction()

function(tephra_check_layering)
  get_property(entries GLOBAL PROPERTY TEPHRA_LAYERED_TARGETS)
  set(forbidden_core cpprest OpenSSL yaml-cpp spdlog CLI11 Boost HTTPLIB cctz tephra_kube tephra_reconcilers tephra_scheduler)
  set(forbidden_adapters cpprest OpenSSL Boost HTTPLIB CLI11)
  set(forbidden_cli cpprest OpenSSL Boost HTTPLIB)
  foreach(e IN LISTS entries)
    string(REPLACE ":" ";" parts "${e}")
    list(GET parts 0 target)
    list(GET parts 1 group)
    get_target_property(libs ${target} LINK_LIBRARIES)
    if(NOT libs)
      continue()
    endif()
    if(group STREQUAL "core")
      set(bad ${forbidden_core})
    elseif(group STREQUAL "cli")
      set(bad ${forbidden_cli})
    else()
      set(bad ${forbidden_adapters})
    endif()
    foreach(l IN LISTS libs)
      foreach(b IN LISTS bad)
        if(l MATCHES "${b}")
          message(FATAL_ERROR "layering violation: ${target} (${group}) links ${l}")
        endif()
      endforeach()
    endforeach()
  endforeach()
endfunction()
