// The one translation unit that compiles Boost.Asio and Boost.Beast
// (BOOST_ASIO_SEPARATE_COMPILATION / BOOST_BEAST_SEPARATE_COMPILATION are set
// on shoal_net, the only target that includes them), so the heavy code is
// built once.
#include <boost/asio/impl/src.hpp>
#include <boost/beast/src.hpp>
